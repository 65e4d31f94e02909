"""BERTScore as a Ray Data stage: a corpus on a cluster, Parquet (or JSONL) in, Parquet out.

- `ScoreBatches`: the callable class for `Dataset.map_batches` (one scorer per actor: the model is
  loaded once, in the actor's `__init__`; its settings, token weights and hash are fixed there).
  A batch (Arrow) keeps every column it has (an id column travels with its row) and gains
  `<prefix>precision`, `<prefix>recall`, `<prefix>f1` and `<prefix>hash`. Columns are named as the
  CLI's `--input` names them (`bertscore.tables.columns`: candidate / prediction / hypothesis,
  reference / references / reference_1..n, or given), and cells follow the table readers' rules
  (`bertscore.tables.cells`): a reference cell may hold a list of strings; a null or a non-text
  cell is a `TableError` naming the row (by its id column when given) and the column; an empty text
  scores 0 with the usual note.
- `document_frequencies`: idf over every reference of a dataset as a Ray aggregation (each batch
  counts the documents holding each token id; a group-by sums them), so no node ever holds the
  references; the driver holds one count per token id. The weights are `idf.py`'s, labelled "idf":
  the numbers and hash of one `score(idf=True)` call over the same pairs.
- `score_table`: read, (count idf), score with a pool of actors, write Parquet: one call for
  `ray job submit` (also `python -m bertscore.ray_data`).

Rows that share references: the stream hands each actor whatever batch comes next, so every actor
embeds every reference its batches hold, and a reference repeated across the corpus (several systems'
outputs, several samples per prompt) is embedded once per actor that meets it. `group_references=True`
(`grouped_by_references`) sorts the rows by a hash of their references first (Ray's distributed sort),
so a reference's rows sit in one batch and it is embedded once in the pool; the sort reads the whole
input before the first batch is scored, so the stage no longer streams.

Faults: the actors are started with Ray's `max_restarts` and `max_task_retries` (both -1 by
default: restart an actor that died, retry the batch it held), so a lost worker costs its batch
again, never a row. Memory: Ray Data streams blocks through the pool, cut into blocks of one
batch each on the way (a streaming repartition: any actor takes the next batch, however the input
files are laid out); an actor on CPUs holds the one batch it scores, a GPU actor one more queued.
`ray` is imported here and nowhere else (`pip install 'bertscore[ray]'`).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import math
import os
from collections import Counter
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .dataset_map import OUTPUTS
from .inputs import InputError
from .tables.cells import Where, make_row
from .tables.columns import resolve_columns

if TYPE_CHECKING:
    import pyarrow

    from .scoring.idf import TokenWeights

logger = logging.getLogger("bertscore.ray_data")  # so named under python -m too (__name__: "__main__")

INSTALL_HINT = "pip install 'bertscore[ray]' (Ray Data: ray[data])"
SOURCE = "the Ray dataset"
# batches given to one actor at a time. A scorer on CPUs takes seconds a batch, and a batch queued behind the
# one it scores is work that another actor, once idle, cannot take: at the end of a run one actor could
# score two while the other waits, so it holds only its own (the next block waits in Ray's object store for
# whichever actor is free first). A GPU scores a batch in a fraction of a second, and the idf pass only
# tokenizes: there one batch waits queued, so that the actor does not idle while Ray sends the next.
CPU_TASKS_IN_FLIGHT = 1
QUEUED_TASKS_IN_FLIGHT = 2
# rows an actor scores per call: one call sorts its texts by length and embeds each distinct text once, so
# larger batches pad less and repeat less (2 actors on 20,000 WMT17 pairs: 84.6 s at 2,048 rows, 103.9 s
# at 512); each batch is one block the pool streams, and a lost actor's retry redoes one
DEFAULT_BATCH_SIZE = 2048
# the column `grouped_by_references` adds (a 64-bit hash of the row's references) and `ScoreBatches` drops
GROUP_KEY = "__bertscore_references_hash"
DOCUMENTS = -1  # the token id under which a batch of the idf pass reports how many documents it counted
# the logger of Ray's notice "Token authentication is enabled for this Ray cluster" (a local Ray's default)
AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"


def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise InputError(f"the Ray Data door needs ray: {INSTALL_HINT}") from None
    return ray


def _ray() -> Any:
    """`ray`, connected: to the cluster the process is connected to, or the one Ray finds (RAY_ADDRESS, as
    `ray job submit` sets it, or `ray start` on this machine), with their settings; else a local one the door
    starts quietly (`start_local`)."""
    ray = _import_ray()
    if not ray.is_initialized():
        if _finds_a_cluster():
            ray.init()
        else:
            start_local()
    return ray


def _finds_a_cluster() -> bool:
    """Whether `ray.init()` would connect to a running cluster rather than start one (as Ray decides it; when
    that cannot be told, True: the door then changes nothing)."""
    try:
        from ray._private.services import canonicalize_bootstrap_address

        return canonicalize_bootstrap_address(None) is not None
    except Exception:  # Ray's own check moved or failed: leave the decision and the settings to Ray
        return True


def start_local(**init_options: Any) -> None:
    """Start a local Ray that shows the user's results, warnings and errors, not Ray's start-up notes: the
    driver's "ray" logger at WARNING (`ray.init(logging_level=...)`), the notice that token authentication is
    on left out (it stays on, as Ray sets it), and Ray Data's console at WARNING (its plan, its progress
    logged line by line where stdout is not a terminal, and its "finished" lines stay in the session's log
    files). `init_options` go to `ray.init`. Only for a Ray the door starts: a cluster the process connects
    to keeps its settings (`score_table` and the others call this when the process has no Ray and finds none;
    call it first to size the local Ray, e.g. `start_local(num_cpus=4)`)."""
    ray = _import_ray()
    auth = logging.getLogger(AUTH_LOGGER)
    level = auth.level
    auth.setLevel(logging.ERROR)
    try:
        ray.init(**{"logging_level": logging.WARNING, "include_dashboard": False, **init_options})
    finally:
        auth.setLevel(level)
    if os.environ.get("RAY_DATA_LOGGING_CONFIG") is None:  # else the user's Ray Data logging config serves
        for handler in logging.getLogger("ray.data").handlers:
            if handler.name == "console":
                handler.setLevel(logging.WARNING)


def in_batches(dataset: Any, batch_size: int) -> Any:
    """`dataset` cut, as it streams, into blocks of `batch_size` rows: each block is one actor's batch, so
    every actor of the pool gets work however the input is laid out (Ray reads a folder of small files as
    one block, which one actor would score alone)."""
    return dataset.repartition(target_num_rows_per_block=batch_size)


def _as_columns(reference_columns: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """`reference_columns=` as a tuple of names (one name may be given as a string), or None: found by name."""
    if reference_columns is None:
        return None
    return (reference_columns,) if isinstance(reference_columns, str) else tuple(reference_columns)


def _references_hash(cells: tuple[Any, ...]) -> int:
    """A row's reference cells (texts, or lists of texts) as a signed 64-bit hash: equal cells, equal hash."""
    digest = hashlib.blake2b(repr(cells).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _with_references_hash(batch: pyarrow.Table, references: Sequence[str]) -> pyarrow.Table:
    """`batch` plus `GROUP_KEY`: each row's hash of its cells in the `references` columns (the cells are
    checked later, where they are scored)."""
    import pyarrow

    cells = zip(*(batch.column(name).to_pylist() for name in references))
    return batch.append_column(GROUP_KEY, pyarrow.array([_references_hash(row) for row in cells], pyarrow.int64()))


def grouped_by_references(dataset: Any, batch_size: int, *, candidate_column: str | None = None,
                          reference_columns: Sequence[str] | None = None, actors: int = 1, io_cpus: float = 1) -> Any:
    """`dataset` sorted by a hash of each row's references, in equal blocks of at most `batch_size` rows, as
    many blocks as a multiple of `actors` (each actor of the pool gets as many). The rows sharing their
    references are adjacent, so each reference falls in one block (two where a block ends inside its rows)
    and one actor embeds it, where the stream (`in_batches`) has every actor embed it. Costs a count of the
    rows (Parquet: its metadata) and Ray's distributed sort over the hash's range (no sampling pass), which
    reads the whole input before the first block leaves: the stage no longer streams, and Ray's object
    store holds the input (spilling to disk past its size). Map the blocks with `batch_size=None` (a block
    is one batch); `ScoreBatches` drops the hash column."""
    names = dataset.schema().names
    if GROUP_KEY in names:
        raise InputError(f"{SOURCE} already has a column {GROUP_KEY!r}, the one group_references=True adds: "
                         "rename it, or leave group_references off")
    _, references = resolve_columns(names, SOURCE, candidate_column, _as_columns(reference_columns))
    blocks = max(1, math.ceil(math.ceil(dataset.count() / batch_size) / actors)) * actors
    keyed = dataset.map_batches(_with_references_hash, fn_kwargs=dict(references=references), batch_format="pyarrow",
                                batch_size=None, num_cpus=io_cpus)
    # the hash is uniform over the signed 64-bit range: equal slices of it are equal shares of distinct references
    boundaries = [-(2**63) + (2**64 * part) // blocks for part in range(1, blocks)]
    ordered = keyed.sort(GROUP_KEY, boundaries=boundaries) if boundaries else keyed
    # a slice holds however many rows its references have: cut the sorted rows into equal blocks
    return ordered.repartition(blocks)


class _BatchRows:
    """The checked rows of one Arrow batch: columns resolved as the CLI does, cells as the table readers."""

    def __init__(self, candidate_column: str | None, reference_columns: Sequence[str] | None,
                 id_column: str | None):
        self.candidate_column = candidate_column
        self.reference_columns = _as_columns(reference_columns)
        self.id_column = id_column

    def read(self, batch: pyarrow.Table) -> tuple[list[str], list[list[str]]]:
        """(candidates, reference groups) of the batch, in its row order."""
        names = batch.column_names
        if self.id_column is not None and self.id_column not in names:
            raise InputError(f"{SOURCE} has no id column {self.id_column!r} (its columns: "
                             f"{', '.join(map(repr, names))}): name it with id_column=")
        candidate, references = resolve_columns(names, SOURCE, self.candidate_column, self.reference_columns)
        values = {name: batch.column(name).to_pylist() for name in (candidate, *references)}
        ids = batch.column(self.id_column).to_pylist() if self.id_column is not None else None
        candidates: list[str] = []
        groups: list[list[str]] = []
        for index in range(batch.num_rows):
            source = SOURCE if ids is None else f"{SOURCE} (row with {self.id_column}={ids[index]!r})"
            row = make_row(lambda column: values[column][index], Where(source, index + 1, None), candidate,
                           references, lists_in_text=False)
            candidates.append(row.candidate)
            groups.append(row.references)
        return candidates, groups


class ScoreBatches:
    """`Dataset.map_batches(ScoreBatches, fn_constructor_kwargs=dict(scorer_options=...), batch_format="pyarrow",
    compute=ray.data.ActorPoolStrategy(size=n))`: each batch gains the score columns and the hash.

    `scorer_options`: `BERTScorer`'s keywords (`model_type`, `num_layers`, `idf` as texts, a mapping or a
    `TokenWeights`, ...); the device defaults to the actor's GPU where Ray gave it one. `weights`: idf over
    the whole dataset (`document_frequencies`); per-batch idf (`idf=True`) is refused."""

    def __init__(self, scorer_options: Mapping[str, Any] | None = None, candidate_column: str | None = None,
                 reference_columns: Sequence[str] | None = None, id_column: str | None = None,
                 prefix: str = "bertscore_", weights: TokenWeights | None = None):
        from .scorer import BERTScorer

        options = dict(scorer_options or {})
        if options.get("idf") is True and weights is None:
            raise InputError(
                "scorer_options has idf=True, which counts idf over each call's references: with Ray Data a call is "
                "one batch, so the weights would change from batch to batch. Count them over the dataset first: "
                "weights=bertscore.ray_data.document_frequencies(dataset, scorer_options) (score_table(idf=True) "
                "does it)")
        if weights is not None:
            options["idf"] = True  # the weights of every call: idf over the dataset's references, hashed "idf"
        self.rows = _BatchRows(candidate_column, reference_columns, id_column)
        self.prefix, self.weights = prefix, weights
        self.scorer = BERTScorer(**options)
        self.hash = self.scorer.hash_for(weights)

    def __call__(self, batch: pyarrow.Table) -> pyarrow.Table:
        import pyarrow

        if GROUP_KEY in batch.column_names:  # added by grouped_by_references, not the user's
            batch = batch.drop_columns([GROUP_KEY])
        candidates, groups = self.rows.read(batch)
        scores = self.scorer.score(candidates, groups, weights=self.weights)
        for name, values in zip(OUTPUTS, scores):
            # [N] per column, or [K, N] with all_layers: a list of K per row
            array = (pyarrow.array(values.T.tolist(), pyarrow.list_(pyarrow.float32())) if values.dim() == 2
                     else pyarrow.array(values.numpy(), pyarrow.float32()))
            batch = batch.append_column(self.prefix + name, array)
        return batch.append_column(self.prefix + "hash", pyarrow.array([self.hash] * batch.num_rows, pyarrow.string()))

    def __repr__(self) -> str:
        return f"ScoreBatches(hash={self.hash!r}, prefix={self.prefix!r})"


class CountDocuments:
    """One batch of the idf pass: token id -> documents (references) holding it, plus the number of
    documents under token id `DOCUMENTS` (-1). Tokens as `score(idf=True)` counts them."""

    def __init__(self, scorer_options: Mapping[str, Any] | None = None, candidate_column: str | None = None,
                 reference_columns: Sequence[str] | None = None, id_column: str | None = None):
        from .scorer import BERTScorer

        self.rows = _BatchRows(candidate_column, reference_columns, id_column)
        self.scorer = BERTScorer(**_tokenizing_options(scorer_options or {}))

    def __call__(self, batch: pyarrow.Table) -> pyarrow.Table:
        import pyarrow

        _, groups = self.rows.read(batch)
        references = [reference for group in groups for reference in group]
        counts: Counter[int] = Counter()
        for ids in self.scorer.pipeline.document_ids(references):
            counts.update(set(ids))
        counts[DOCUMENTS] = len(references)
        return pyarrow.table({"token_id": pyarrow.array(list(counts), pyarrow.int64()),
                              "documents": pyarrow.array(list(counts.values()), pyarrow.int64())})


def _tokenizing_options(scorer_options: Mapping[str, Any]) -> dict[str, Any]:
    """A scorer's options for counting tokens: the same model and long-text rule, on the CPU, no idf."""
    options = {key: value for key, value in scorer_options.items() if key not in ("idf", "device", "dtype")}
    return dict(options, device="cpu")


def _vocabulary(scorer_options: Mapping[str, Any]) -> tuple[int, list[int]]:
    """The tokenizer's vocabulary size and the ids that weigh 0, from a scorer built as the actors build it."""
    from .scorer import BERTScorer

    model = BERTScorer(**_tokenizing_options(scorer_options)).model
    return model.vocab_size, list(model.zero_weight_ids)


def document_frequencies(dataset: Any, scorer_options: Mapping[str, Any] | None = None, *,
                         candidate_column: str | None = None, reference_columns: Sequence[str] | None = None,
                         id_column: str | None = None, actors: int = 1, batch_size: int = 1024,
                         partitions: int = 4, num_cpus: float = 1) -> TokenWeights:
    """idf weights over every reference of `dataset` (each reference one document, multi-references
    flattened, as `score(idf=True)` counts them), summed by a Ray aggregation: the actors count a batch
    each, a group-by adds the counts per token id. Labelled "idf": a `score(idf=True)` call over the
    same pairs gives the same weights and the same hash. `partitions`: the group-by's hash partitions (the
    table has one row per token id of the vocabulary, so a few suffice)."""
    ray = _ray()
    from .scoring.idf import TokenWeights

    options = dict(scorer_options or {})
    counted = in_batches(dataset, batch_size).map_batches(
        CountDocuments, fn_constructor_kwargs=dict(scorer_options=options, candidate_column=candidate_column,
                                                   reference_columns=reference_columns, id_column=id_column),
        batch_format="pyarrow", batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=actors, max_tasks_in_flight_per_actor=QUEUED_TASKS_IN_FLIGHT),
        num_cpus=num_cpus)  # Ray's defaults for an actor pool: max_restarts=-1, max_task_retries=-1
    summed = counted.groupby("token_id", num_partitions=partitions).sum("documents")
    counts: dict[int, int] = {}
    for part in summed.iter_batches(batch_format="pyarrow", batch_size=None):
        counts.update(zip(part.column("token_id").to_pylist(), part.column("sum(documents)").to_pylist()))
    total = counts.pop(DOCUMENTS, 0)
    vocab_size, zero_weight_ids = ray.get(ray.remote(num_cpus=min(num_cpus, 1))(_vocabulary).remote(options))
    return TokenWeights.from_counts(counts, total, vocab_size, zero_weight_ids, label="idf")


def read_table(path: str | os.PathLike[str] | Sequence[str], format: str | None = None,
               io_cpus: float = 1) -> Any:
    """A Ray dataset of a Parquet file or folder (`format="parquet"`) or JSON Lines (`"jsonl"`);
    without `format`, by the extension (.jsonl, .ndjson, .json: JSON Lines; else Parquet).
    `io_cpus`: the CPUs a read task asks for (less than 1 leaves a small cluster's CPUs to the actors)."""
    ray = _ray()
    paths = [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]
    if format is None:
        format = "jsonl" if all(p.lower().endswith((".jsonl", ".ndjson", ".json")) for p in paths) else "parquet"
    if format == "parquet":
        return ray.data.read_parquet(paths, num_cpus=io_cpus)
    if format == "jsonl":
        return ray.data.read_json(paths, lines=True, num_cpus=io_cpus)
    raise InputError(f"format must be 'parquet' or 'jsonl', got {format!r}")


def score_dataset(dataset: Any, scorer_options: Mapping[str, Any] | None = None, *, idf: bool = False,
                  candidate_column: str | None = None, reference_columns: Sequence[str] | None = None,
                  id_column: str | None = None, prefix: str = "bertscore_", actors: int = 1,
                  num_gpus: float | None = None, num_cpus: float = 1, batch_size: int = DEFAULT_BATCH_SIZE,
                  group_references: bool = False, io_cpus: float = 1, max_restarts: int = -1,
                  max_task_retries: int = -1, scorer_class: type[ScoreBatches] = ScoreBatches) -> Any:
    """`dataset` with the score columns, lazily (Ray Data runs it when it is written or read).

    `actors`: the pool's size (one scorer each, `num_gpus` GPUs each; without GPUs, `num_cpus` CPUs each:
    leave the cluster one whole CPU for the read and write tasks, e.g. 0.5 with 2 actors on 2 CPUs, or the
    pool waits for blocks no task can read).
    `idf=True`: idf over the dataset's references (`document_frequencies`, run now).
    `group_references=True`: rows sharing their references scored in one batch (`grouped_by_references`,
    whose count runs now; its key stage asks for `io_cpus`): worth its sort where references repeat across
    the corpus; otherwise the input streams in blocks of `batch_size` rows (`in_batches`). A lost actor is
    restarted `max_restarts` times and its batch retried `max_task_retries` times (-1: without limit)."""
    ray = _ray()
    options = dict(scorer_options or {})
    columns = dict(candidate_column=candidate_column, reference_columns=reference_columns, id_column=id_column)
    weights = None
    if idf:
        if options.get("idf") not in (None, False, True):
            raise InputError("idf=True counts idf over the dataset; scorer_options also gives idf weights: pass one")
        weights = document_frequencies(dataset, options, actors=actors, num_cpus=num_cpus, **columns)
    resources = {"num_gpus": num_gpus} if num_gpus else {"num_cpus": num_cpus}
    if group_references:
        blocks = grouped_by_references(dataset, batch_size, candidate_column=candidate_column,
                                       reference_columns=reference_columns, actors=actors, io_cpus=io_cpus)
        rows_per_call = None  # a block is one batch: cut to at most batch_size rows
    else:
        blocks, rows_per_call = in_batches(dataset, batch_size), batch_size
    return blocks.map_batches(
        scorer_class, fn_constructor_kwargs=dict(scorer_options=options, prefix=prefix, weights=weights, **columns),
        batch_format="pyarrow", batch_size=rows_per_call,
        compute=ray.data.ActorPoolStrategy(
            size=actors, max_tasks_in_flight_per_actor=QUEUED_TASKS_IN_FLIGHT if num_gpus else CPU_TASKS_IN_FLIGHT),
        **_fault_arguments(max_restarts, max_task_retries), **resources)


def _fault_arguments(max_restarts: int, max_task_retries: int) -> dict[str, int]:
    """map_batches' keywords for other than Ray's actor-pool defaults (restart a dead actor and retry its
    batch without limit: -1, -1); Ray takes them only as `ray_remote_args`, deprecated, so only then."""
    given = {"max_restarts": max_restarts, "max_task_retries": max_task_retries}
    return {key: value for key, value in given.items() if value != -1}


def score_table(input: str | os.PathLike[str] | Sequence[str], output: str | os.PathLike[str],
                scorer_options: Mapping[str, Any] | None = None, *, format: str | None = None,
                io_cpus: float = 1, **keywords: Any) -> str:
    """Read `input` (Parquet or JSON Lines, `read_table`), score it (`score_dataset`'s keywords) and
    write the rows with their scores as Parquet files in the folder `output` (Ray's `write_parquet`);
    `io_cpus`: as `read_table` (the write tasks, and `group_references`' key stage, ask for `io_cpus` too).
    Returns the output folder."""
    inputs = [input] if isinstance(input, (str, os.PathLike)) else list(input)
    output = os.fspath(output)
    if any(os.path.abspath(os.fspath(path)) == os.path.abspath(output) for path in inputs):
        raise InputError(f"the output {output} is also the input: choose another folder")
    if os.path.isdir(output) and os.listdir(output):
        raise InputError(f"the output folder {output} is not empty: Ray writes a file per block there, and files "
                         "left from another run would mix with this one's; choose a new or empty folder")
    scored = score_dataset(read_table(inputs, format, io_cpus), scorer_options, io_cpus=io_cpus, **keywords)
    scored.write_parquet(output, ray_remote_args={"num_cpus": io_cpus})
    return output


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m bertscore.ray_data INPUT OUTPUT [...]`: `score_table` on the cluster `ray.init()` finds
    (`ray job submit -- python -m bertscore.ray_data ...`), or with none on a local Ray (`start_local`)."""
    parser = argparse.ArgumentParser(prog="python -m bertscore.ray_data", description=main.__doc__)
    parser.add_argument("input", nargs="+", help="Parquet files or folders, or JSON Lines files")
    parser.add_argument("output", help="the folder the scored Parquet files are written in (new or empty)")
    parser.add_argument("-m", "--model", dest="model_type", help="model name, local folder or the embedded MiniLM")
    parser.add_argument("-l", "--num-layers", type=int)
    parser.add_argument("--idf", action="store_true", help="idf over every reference, counted by a Ray aggregation")
    parser.add_argument("--rescale-with-baseline", action="store_true")
    parser.add_argument("--lang")
    parser.add_argument("--candidate-column")
    parser.add_argument("--reference-column", action="append", dest="reference_columns")
    parser.add_argument("--id-column")
    parser.add_argument("--actors", type=int, default=1, help="scorers in the pool (one model each)")
    parser.add_argument("--num-gpus", type=float, help="GPUs per actor (e.g. 1); default: CPUs")
    parser.add_argument("--num-cpus", type=float, default=1, help="CPUs per actor without GPUs (default 1)")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="rows per batch an actor scores")
    parser.add_argument("--group-references", action="store_true",
                        help="sort the rows by their references first, so each repeated reference is embedded once "
                             "in the pool (a distributed sort: the input is read whole before scoring starts)")
    parser.add_argument("-f", "--format", choices=("parquet", "jsonl"))
    args = parser.parse_args(argv)
    options = {key: getattr(args, key) for key in ("model_type", "num_layers", "lang", "rescale_with_baseline")
               if getattr(args, key) not in (None, False)}
    score_table(args.input, args.output, options, format=args.format, idf=args.idf,
                candidate_column=args.candidate_column, reference_columns=args.reference_columns,
                id_column=args.id_column, actors=args.actors, num_gpus=args.num_gpus,
                num_cpus=args.num_cpus, batch_size=args.batch_size, group_references=args.group_references)
    logger.info("scores written to %s", args.output)
    return 0


if __name__ == "__main__":
    # the command's own lines on stderr ("bertscore: scores written to ..."), as the bertscore command shows them
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("bertscore: %(message)s"))
    logging.getLogger("bertscore").addHandler(_handler)
    logging.getLogger("bertscore").setLevel(logging.INFO)
    raise SystemExit(main())
