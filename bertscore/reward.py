"""BERTScore as a reward function for RL loops (TRL's `GRPOTrainer(reward_funcs=...)`).

TRL calls each reward function as `func(prompts=..., completions=..., completion_ids=...,
**columns)`, where `columns` holds the dataset's other columns, one entry per completion
(each prompt's row repeated `num_generations` times), plus TRL's own keywords
(`trainer_state`, `log_extra`, ...). `BERTScoreReward` reads the completions and the
reference column and returns one float per completion: the BERTScore F1 (or P, or R) of the
completion against its reference(s), the numbers `bertscore.score` gives for the same pairs.

The scorer comes from a `ScorerPool` (rewards on the same model share one encoder and one
embedding cache), so a reference repeated across a prompt's `num_generations` completions is
embedded once per call, and once for the whole run while the cache holds it. Instances are
picklable (TRL's async rollout worker sends reward functions to a child process): neither the
loaded scorer nor the pool is pickled; a copy loads its scorer from its own process's shared
pool on first use.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .inputs import InputError, InputTypeError, MissingColumnError, as_list, normalize_group
from .notes import REWARD, spelled
from .pool import ScorerPool
from .wording import a_type

if TYPE_CHECKING:
    from .scorer import BERTScorer

OUTPUTS = ("f1", "precision", "recall")
_TRL_KEYWORDS = frozenset({"prompts", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments"})

# One pool for every reward in the process: two rewards on one model (F1 and recall, say) share
# its encoder and cache. Up to two models are held; a reward keeps its own scorer once loaded.
_SHARED_POOL = ScorerPool(max_models=2)


class PooledReward:
    """What every BERTScore reward shares: a name TRL logs it under (`__name__`), a scorer taken
    from a `ScorerPool` (loaded when the reward is built: a bad model name or setting is an error
    then, not at training step 1), its hash, and pickling without the loaded scorer."""

    def __init__(self, model_type: str | None, name: str, pool: ScorerPool | None,
                 scorer_settings: dict[str, Any]) -> None:
        if scorer_settings.get("all_layers"):
            raise InputError("all_layers=True gives a score per layer, but a reward is one number per completion: "
                             "pick the layer with num_layers=")
        self.model_type = model_type
        self.settings = dict(scorer_settings)
        self.pool = pool
        self.__name__ = name
        self._scorer: BERTScorer | None = None
        self._load_lock = threading.Lock()
        _ = self.scorer  # load now

    @property
    def scorer(self) -> BERTScorer:
        """The `BERTScorer` this reward scores with (taken from the pool on first use)."""
        if self._scorer is None:
            with self._load_lock:
                if self._scorer is None:
                    pool = self.pool if self.pool is not None else _SHARED_POOL  # thread-safe
                    self._scorer = pool.get(model_type=self.model_type, **self.settings)
        return self._scorer

    @property
    def hash(self) -> str:
        """The scorer's hash code (model, layers, idf, rescaling, versions), for a run's records."""
        return self.scorer.hash

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_scorer"] = None  # the copy loads its own (in its own process) on first use
        state["_load_lock"] = None
        state["pool"] = None  # a pool holds this process's encoders: the copy uses its process's shared pool
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._load_lock = threading.Lock()


class BERTScoreReward(PooledReward):
    """A reward function: BERTScore of each completion against the row's reference(s).

    `model_type` / `lang` / `num_layers` / `idf` / `rescale_with_baseline` / `baseline_path`
    and any other `BERTScorer` keyword (`device`, `dtype`, `batch_size`, `long_texts`, ...)
    set the scorer, as for `bertscore.score`. `reference_column`: the dataset column holding
    each row's reference (a string, or a list of strings for several references: the max is
    taken, as in `score`). `output`: "f1" (default), "precision" or "recall". `name`: the name
    TRL logs the reward under (`rewards/<name>/mean`), default `bertscore_<output>`. `pool`: a
    `ScorerPool` to take the scorer from (default: one shared by every reward in the process).

    Completions may be strings or conversations (lists of {"role", "content"} messages: the
    last assistant message's content is scored). The model loads when the reward is built,
    so a wrong setting fails before training starts; `check_dataset(dataset)` checks the
    reference column before the first rollout. Note that `idf=True` alone computes idf
    over each call's references (a prompt's reference counted once per generation); pass
    `idf=` a list of texts or a mapping for fixed weights. Notes (empty completions, ...) are
    one short `BERTScoreNote` line per cause and call.
    """

    def __init__(
        self,
        model_type: str | None = None,
        *,
        reference_column: str = "reference",
        output: str = "f1",
        name: str | None = None,
        pool: ScorerPool | None = None,
        **scorer_settings: Any,
    ) -> None:
        if output not in OUTPUTS:
            raise InputError(f"output={output!r} is not a BERTScore column: use one of {', '.join(OUTPUTS)}")
        if not isinstance(reference_column, str) or not reference_column:
            raise InputError(f"reference_column must be a column name (a non-empty string), got {reference_column!r}")
        self.reference_column = reference_column
        self.output = output
        super().__init__(model_type, name or f"bertscore_{output}", pool, scorer_settings)

    def __call__(self, completions: Sequence[Any], **columns: Any) -> list[float]:
        """One reward per completion: BERTScore `output` against the row's reference(s)."""
        candidates = completion_texts(completions)
        if not candidates:  # nothing generated this step: nothing to reward (score() refuses an empty list)
            self._references(columns, 0)
            return []
        references = self._references(columns, len(candidates))
        # notes name the completions and the reference column, as the trainer passed them, one line a cause
        with spelled(dataclasses.replace(REWARD, references=self.reference_column)):
            precision, recall, f1 = self.scorer.score(candidates, references)
        values = {"precision": precision, "recall": recall, "f1": f1}[self.output]
        return [float(value) for value in values.tolist()]

    def check_dataset(self, dataset: Any) -> None:
        """Check a training (or evaluation) dataset before the rollout: it has the reference column
        and each row's reference is a string or a non-empty list of strings. `dataset`: a
        `datasets.Dataset` (or `IterableDataset`, whose column names are checked where known), a
        pandas DataFrame, a mapping of columns or a list of rows (mappings). Raises the error the
        reward would raise at the first step (`MissingColumnError`, an `InputError`); returns None."""
        names, column = dataset_column(dataset, self.reference_column)
        if names is not None and self.reference_column not in names:
            raise MissingColumnError(self._missing(f"the dataset has the columns {sorted(names)}"))
        if column is not None:
            self._check_entries(column)

    def _missing(self, received: str) -> str:
        return (f"the reward {self.__name__!r} needs the dataset column {self.reference_column!r}, but {received}: "
                f"add a {self.reference_column!r} column to the training dataset, or pass "
                "reference_column= naming the column that holds the references")

    def _references(self, columns: Mapping[str, Any], count: int) -> list[Any]:
        if self.reference_column not in columns:
            received = sorted(key for key in columns if key not in _TRL_KEYWORDS)
            raise MissingColumnError(self._missing(f"it received the columns {received}"))
        references = self._check_entries(columns[self.reference_column])
        if len(references) != count:
            raise InputError(
                f"column {self.reference_column!r} has {len(references)} entries for {count} completions: "
                "each completion needs its row's reference"
            )
        return [group[0] if isinstance(reference, str) else group for reference, group in references]

    def _check_entries(self, values: Any) -> list[tuple[Any, list[str]]]:
        """Each entry of the reference column with its checked references (`inputs.normalize_group`)."""
        entries = as_list(values, self.reference_column)
        if entries is None:
            raise InputTypeError(
                f"column {self.reference_column!r} must hold one reference per completion (a list), "
                f"got {type(values).__name__}"
            )
        return [(entry, normalize_group(entry, f"{self.reference_column}[{index}]"))
                for index, entry in enumerate(entries)]

    def __repr__(self) -> str:
        settings = "".join(f", {k}={v!r}" for k, v in self.settings.items())
        return (f"BERTScoreReward(model_type={self.model_type!r}, reference_column={self.reference_column!r}, "
                f"output={self.output!r}{settings})")


def completion_texts(completions: Any) -> list[str]:
    """The text of each completion (`completion_text`); the completions come as a list."""
    items = as_list(completions, "completions")
    if items is None:
        raise InputTypeError(f"completions must be a list (one per completion), got {type(completions).__name__}")
    return [completion_text(completion, index) for index, completion in enumerate(items)]


def completion_text(completion: Any, index: int) -> str:
    """The text of one completion: a string as is; a conversation's last assistant message.

    Anything else is an `InputTypeError` (a TypeError) naming `completions[index]` and what it was.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and all(isinstance(m, Mapping) for m in completion):
        for message in reversed(completion):
            if message.get("role") == "assistant":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                if _text_parts(content):  # [{"type": "text", "text": ...}, ...]: joined as chat templates do
                    return "".join(part["text"] for part in content)
                raise InputTypeError(
                    f"completions[{index}]: the last assistant message's content is {_describe(content)}, not text: "
                    "BERTScore scores text (pass a reward that handles other content)"
                )
        roles = [m.get("role") for m in completion]
        raise InputTypeError(f"completions[{index}] is a conversation with no assistant message (roles: {roles})")
    raise InputTypeError(
        f"completions[{index}] is {_describe(completion)}: a completion is a string or a conversation "
        "(a list of {'role': ..., 'content': ...} messages)"
    )


def dataset_column(dataset: Any, name: str) -> tuple[set[str] | None, list[Any] | None]:
    """A dataset's column names (None where unknown: a streamed dataset may not know them) and the
    values of column `name` (None where absent or not readable without iterating the dataset)."""
    if isinstance(getattr(dataset, "column_names", None), Mapping):  # a DatasetDict: its splits' columns
        raise InputTypeError(f"dataset holds the splits {sorted(dataset.column_names)}: pass the one the trainer "
                             "trains on, e.g. dataset['train']")
    if isinstance(dataset, Mapping):  # a mapping of columns (a dict of lists, a datasets row batch)
        return set(dataset), (dataset[name] if name in dataset else None)
    rows = as_list(dataset, "dataset") if isinstance(dataset, (list, tuple)) else None
    if rows is not None:  # a list of rows
        for index, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise InputTypeError(f"dataset[{index}] is {_describe(row)}: a row is a mapping of column -> value")
        names = set.intersection(*(set(row) for row in rows)) if rows else set()
        return names, ([row[name] for row in rows] if name in names else None)
    columns = getattr(dataset, "column_names", None)  # datasets.Dataset / IterableDataset
    if columns is None and hasattr(dataset, "columns") and hasattr(dataset, "iloc"):  # a pandas DataFrame
        columns = [str(c) for c in dataset.columns]
    if columns is None:
        if hasattr(dataset, "__iter__") and hasattr(dataset, "features"):  # a streamed dataset of unknown columns
            return None, None
        raise InputTypeError(f"dataset is {_describe(dataset)}: pass a datasets.Dataset, a pandas DataFrame, "
                             "a mapping of columns or a list of rows")
    names = set(columns)
    if name not in names or not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
        return names, None
    return names, list(dataset[name])


def _text_parts(content: Any) -> bool:
    """True for a non-empty list of text parts (the multimodal message format, text only)."""
    return (isinstance(content, Sequence) and not isinstance(content, str) and bool(content)
            and all(isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str)
                    for part in content))


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{a_type(value)} {text[:60]}{'...' if len(text) > 60 else ''}"

