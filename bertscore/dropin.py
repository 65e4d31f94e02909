"""The official `bert_score` module surface over this package: what the drop-in re-exports.

The drop-in distribution (bert_score_dropin/, import name `bert_score`) is thin re-exports of
this room, so that code written for the official package (`bert_score.score`,
`bert_score.BERTScorer`, `bert_score.utils.get_hash`, `lang2model`, ...) runs unedited on
this package's scorer: the official positional order and keywords, the official hash format
(its version field naming this implementation, `official.IMPLEMENTATION_VERSION`), the
official tables. Scoring is `BERTScorer`'s; a scorer built here takes the encoder this process
already loaded (`shared_models.py`), so one-pair-per-call loops load the model once.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import torch

from .idf import TokenWeights
from .model_tables import DEFAULT_MULTILINGUAL_MODEL, LANG_TO_MODEL, MODEL_TO_LAYERS
from .model_tokenizer import load_tokenizer, special_layout
from .models import load_model
from .official import IMPLEMENTATION_VERSION, official_hash_text
from .pipeline import Scores
from .scorer import BERTScorer as _Scorer
from .sources import resolve_source

if TYPE_CHECKING:  # for type checkers only: the figure type of an optional dependency
    from matplotlib.figure import Figure

__version__ = IMPLEMENTATION_VERSION

# The official tables under the official names. `lang2model` is a defaultdict, as the official one:
# an unknown language falls back to multilingual BERT. `model2layers` IS this package's table (the
# official one plus the embedded MiniLM), so that an entry a caller adds sets the default layer.
lang2model: defaultdict[str, str] = defaultdict(lambda: DEFAULT_MULTILINGUAL_MODEL, LANG_TO_MODEL)
model2layers: dict[str, int] = MODEL_TO_LAYERS

# The official package's internal helpers (its embedding and matching steps), which this one does
# not provide: naming them gives an AttributeError saying so (see docs/existing-code.md).
OFFICIAL_INTERNALS = frozenset({
    "bert_cos_score_idf", "get_bert_embedding", "greedy_cos_idf", "collate_idf", "padding", "bert_encode",
    "process", "cache_scibert", "SCIBERT_URL_DICT", "model_type_has_prefix_space",
})


def internal_missing(module: str, name: str) -> AttributeError:
    """The error for `bert_score.<module>.<name>` that the drop-in does not provide."""
    if name in OFFICIAL_INTERNALS:
        return AttributeError(
            f"{module}.{name} is an internal helper of the official bert-score package that this drop-in "
            "(bertscore) does not provide: score with bert_score.score or bert_score.BERTScorer, or install the "
            "official package for its internals (docs/existing-code.md)")
    return AttributeError(f"module {module!r} has no attribute {name!r}")


def get_hash(
    model: str, num_layers: int, idf: Any, rescale_with_baseline: bool, use_custom_baseline: bool,
    use_fast_tokenizer: bool,
) -> str:
    """The official `bert_score.utils.get_hash` (its format; the version names this implementation)."""
    return official_hash_text(model, num_layers, idf, rescale_with_baseline, use_custom_baseline, use_fast_tokenizer)


class BERTScorer(_Scorer):
    """`bertscore.BERTScorer` under the official semantics of `bert_score.BERTScorer`: `hash` in the
    official format (equal to `get_hash(...)` for the same settings, so evaluate's module keeps its
    scorer), `score(..., return_hash=True)` returning that hash, and `lang` resolved through
    `lang2model`. Every keyword of `bertscore.BERTScorer` is taken too."""

    def __init__(
        self,
        model_type: str | None = None,
        num_layers: int | None = None,
        batch_size: int | None = 64,
        nthreads: int = 4,
        all_layers: bool = False,
        idf: Any = False,
        idf_sents: Sequence[str] | None = None,
        device: str | torch.device | None = None,
        lang: str | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        use_fast_tokenizer: bool = False,
        **options: Any,
    ):
        if model_type is None and isinstance(lang, str) and options.get("loaded_model") is None:
            model_type = lang2model[lang.lower()]  # the official lookup: edits of lang2model count
        super().__init__(model_type, num_layers, batch_size, nthreads, all_layers, idf, idf_sents, device, lang,
                         rescale_with_baseline, baseline_path, use_fast_tokenizer, **options)

    @property
    def hash(self) -> str:
        """The official hash of these settings (`official_hash`); `bertscore_hash` names every setting."""
        return self.official_hash()

    @property
    def bertscore_hash(self) -> str:
        """This package's reproducibility hash (revision, dtype, device, library versions...)."""
        return self.pipeline.settings.hash

    @property
    def idf(self) -> bool:
        """Whether tokens are idf-weighted (the official attribute)."""
        return self.pipeline.settings.idf_mode != "no-idf"

    @property
    def use_custom_baseline(self) -> bool:
        return self.baseline_path is not None

    def score(  # type: ignore[override] - the official signature
        self,
        cands: Sequence[str],
        refs: Sequence[str] | Sequence[Sequence[str]],
        verbose: bool = False,
        batch_size: int | None = 64,
        return_hash: bool = False,
    ) -> Scores | tuple[Scores, str]:
        """P, R, F of each candidate (the best over its references); `((P, R, F), hash)` with `return_hash`."""
        out = super().score(cands, refs, verbose=verbose, batch_size=batch_size)
        return (out, self.hash) if return_hash else out


def score(
    cands: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    model_type: str | None = None,
    num_layers: int | None = None,
    verbose: bool = False,
    idf: bool | Mapping[int, float] = False,
    device: str | torch.device | None = None,
    batch_size: int | None = 64,
    nthreads: int = 4,
    all_layers: bool = False,
    lang: str | None = None,
    return_hash: bool = False,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    use_fast_tokenizer: bool = False,
) -> Scores | tuple[Scores, str]:
    """The official `bert_score.score`: P, R, F tensors [N] ([K, N] with all_layers), and the official
    hash with `return_hash`. The encoder loaded by an earlier call (or a live scorer) is reused."""
    scorer = BERTScorer(
        model_type=model_type, num_layers=num_layers, batch_size=batch_size, nthreads=nthreads,
        all_layers=all_layers, idf=idf, device=device, lang=lang, rescale_with_baseline=rescale_with_baseline,
        baseline_path=baseline_path, use_fast_tokenizer=use_fast_tokenizer, cache_bytes=0,
    )
    return scorer.score(cands, refs, verbose=verbose, batch_size=batch_size, return_hash=return_hash)


def plot_example(
    candidate: str,
    reference: str,
    model_type: str | None = None,
    num_layers: int | None = None,
    lang: str | None = None,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    use_fast_tokenizer: bool = False,
    fname: str = "",
) -> Figure:
    """The official module-level `plot_example`: one pair's token-similarity heatmap, saved to `fname`
    when given; returned as a matplotlib Figure (nothing is shown on screen)."""
    scorer = BERTScorer(model_type=model_type, num_layers=num_layers, lang=lang,
                        rescale_with_baseline=rescale_with_baseline, baseline_path=baseline_path,
                        use_fast_tokenizer=use_fast_tokenizer, cache_bytes=0)
    return scorer.plot_example(candidate, reference, fname=fname)


# ----- bert_score.utils ----------------------------------------------------------------------------------
def get_tokenizer(model_type: str, use_fast: bool = False) -> Any:
    """The tokenizer the scorer uses for `model_type` (a fast one; with a prefix space where the
    official package adds one per call). `use_fast` is kept for compatibility."""
    return load_tokenizer(resolve_source(model_type)[0])[0]


def get_model(model_type: str, num_layers: int, all_layers: bool | None = None) -> torch.nn.Module:
    """The encoder of `model_type` cut after `num_layers` layers (every layer with `all_layers`), on the
    CPU in eval mode: a fresh copy the caller owns (never the scorers' shared one)."""
    return load_model(model_type, num_layers, bool(all_layers)).encoder


def sent_encode(tokenizer: Any, sent: str) -> list[int]:
    """One text's token ids with the special tokens, cut at the tokenizer's max length (official)."""
    sent = sent.strip()
    if not sent:
        lead, trail = special_layout(tokenizer)
        return [*lead, *trail]
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and limit < 1_000_000:  # not transformers' "no limit" sentinel
        return list(tokenizer.encode(sent, add_special_tokens=True, max_length=limit, truncation=True))
    return list(tokenizer.encode(sent, add_special_tokens=True))


def get_idf_dict(arr: Sequence[str], tokenizer: Any, nthreads: int = 4) -> defaultdict[int, float]:
    """Token id -> idf over the texts `arr`: log((M + 1) / (df + 1)), unseen ids log(M + 1) (official).
    `nthreads` is kept for compatibility: counting needs no process pool."""
    documents = [sent_encode(tokenizer, text) for text in arr]
    weights = TokenWeights.from_documents(documents, vocab_size=0, zero_weight_ids=())
    unseen = float(weights.default)
    seen = {token_id for document in documents for token_id in document}
    return defaultdict(lambda: unseen, {token_id: float(weights.table[token_id]) for token_id in seen})
