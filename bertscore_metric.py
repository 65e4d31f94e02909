"""BERTScore as an `evaluate` metric: `evaluate.load("<owner>/bertscore_metric")` (a Space), or a path.

A thin wrapper: it parses inputs and delegates to the `bertscore` package, whose scorers
(encoder, embedding cache) are reused across `compute()` calls and rebuilt whenever a setting
that can change the numbers changes.

From a Space, evaluate downloads this file alone, as `<space name>.py` (so the Space is named
`bertscore_metric`); the package comes from the same Space, whose repository pip installs:
`pip install git+https://huggingface.co/spaces/<owner>/bertscore_metric`. evaluate checks a
module's imports before running it and names a missing one as `pip install <import name>`, which
would be `pip install bertscore`: no distribution of that name is this project's. So the package
is imported in the indented block below (evaluate reads unindented `import` lines only), and a
missing package, or one of another version than this file, stops the load with the command that
installs the matching package from the Space this file came from (docs/deploy.md).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import shlex
from pathlib import Path
from typing import Any

# The `evaluate` extra (pyproject.toml; a test holds the two to it). Tried first, so that importing this
# file without them stops with the command that installs them; then imported unindented, where
# evaluate's own check of a module's imports sees them.
EVALUATE_EXTRA = ("evaluate>=0.4.1", "datasets>=2.14")


def _require_the_evaluate_extra() -> None:
    for name in ("datasets", "evaluate"):
        try:
            importlib.import_module(name)
        except ImportError as missing:
            raise ImportError(
                f"bertscore_metric needs the packages of bertscore's `evaluate` extra ({name} is not installed): "
                f"pip install {' '.join(shlex.quote(spec) for spec in EVALUATE_EXTRA)}"
                "  (from a clone: pip install -e \".[evaluate]\")"
            ) from missing


_require_the_evaluate_extra()
import datasets  # noqa: E402
import evaluate  # noqa: E402

MODULE_VERSION = "0.1.0"  # the bertscore version this file belongs to (a test holds it to bertscore/version.py)


def _origin() -> tuple[str | None, str | None]:
    """(`<owner>/<name>` of the Space evaluate loaded this file from, or None; the folder of the
    local file it was loaded from, or None), read from evaluate's module cache: a Space's copy is
    `evaluate_modules.metrics.<owner>--<name>.<hash>.<name>` (Hub ids never hold "--"), a local
    file's copy has a `<name>.json` beside it naming the original."""
    parts = __name__.split(".")
    if len(parts) == 5 and parts[:2] == ["evaluate_modules", "metrics"] and "--" in parts[2]:
        return parts[2].replace("--", "/", 1), None
    try:
        original = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))["original file path"]
    except (OSError, ValueError, KeyError, TypeError):
        original = __file__
    return None, str(Path(original).resolve().parent)


def _install_command() -> str:
    """The command that installs the bertscore package this file belongs to."""
    space, folder = _origin()
    if space is not None:
        return f"pip install git+https://huggingface.co/spaces/{space}"
    if folder is not None and (Path(folder) / "pyproject.toml").is_file():
        return f"pip install -e {shlex.quote(folder)}"
    return "pip install git+https://huggingface.co/spaces/<owner>/bertscore_metric (the Space this file came from)"


def _loaded_from() -> str:
    space, folder = _origin()
    return f"the Space {space}" if space is not None else str(folder)


def _package_missing() -> ImportError:
    return ImportError(
        f"bertscore_metric (from {_loaded_from()}) needs the bertscore package {MODULE_VERSION}, which is not "
        f"installed. Install it from where this file came from, then load the metric again:\n"
        f"    {_install_command()}"
    )


def _package_mismatch(package: Any) -> ImportError:
    installed = getattr(package, "__version__", None) or "without a version (not this project's)"
    where = getattr(package, "__file__", None)
    return ImportError(
        f"bertscore_metric {MODULE_VERSION} (from {_loaded_from()}) needs the bertscore package of the same "
        f"version; the installed one is {installed} (at {Path(where).parent if where else ', '.join(package.__path__)}). "
        f"Install the package that matches this file, then load the metric again:\n    {_install_command()}"
    )


try:  # indented imports of the package: see the module docstring
    import bertscore
except ModuleNotFoundError as missing:
    if missing.name != "bertscore":
        raise  # the package is there and one of its own dependencies is not: that error names it
    raise _package_missing() from None
else:
    if getattr(bertscore, "__version__", None) != MODULE_VERSION:
        raise _package_mismatch(bertscore)
    from bertscore import __version__ as bertscore_version
    from bertscore.inputs import InputTypeError, check_text, normalize_batch, normalize_group
    from bertscore.notes import EVALUATE, report, spelled
    from bertscore.pool import ScorerPool
    from bertscore.stats import bootstrap_ci, check_bootstrap_settings

_CITATION = """\
@inproceedings{bert-score,
  title={BERTScore: Evaluating Text Generation with BERT},
  author={Tianyi Zhang* and Varsha Kishore* and Felix Wu* and Kilian Q. Weinberger and Yoav Artzi},
  booktitle={International Conference on Learning Representations},
  year={2020},
  url={https://openreview.net/forum?id=SkeHuCVFDr}
}
"""

_DESCRIPTION = """\
BERTScore matches each candidate token to its most similar reference token by the cosine
similarity of contextual embeddings (precision), each reference token to its most similar
candidate token (recall), and reports their harmonic mean (F1). Optional idf weighting and
baseline rescaling. The numbers equal the official `bert-score` definition on current
transformers.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): candidate texts.
    references (list of str, or list of list of str): one reference, or several, per candidate.
    lang (str): language code choosing the default model (en -> roberta-large, ...).
    model_type (str): hub id, local folder, or "sentence-transformers/all-MiniLM-L6-v2" (offline).
    num_layers (int): layer to use (default: the official per-model layer).
    idf (bool | dict | list of str): idf weights from the references, a token-id -> weight
        mapping, or the texts to compute them from.
    rescale_with_baseline (bool): rescale with the packaged baseline (needs lang when ambiguous).
    baseline_path (str): a custom LAYER,P,R,F baseline file.
    batch_size (int): max sentences per encoder batch.
    max_tokens_per_batch (int): token budget per encoder batch.
    device (str): "cpu", "cuda", "cuda:1", ... (default: CUDA when available).
    dtype (str): "float32" (default), "bfloat16", "float16", or "auto" (bf16 where the hardware
        computes it natively and faster, else fp32; the hash names the dtype used).
    cache_bytes (int): size of the embedding cache kept between computes (default 512 MiB; 0: off).
    cache_device (str): where cached embeddings live ("cpu" keeps GPU embeddings in host memory).
    long_texts (str): "truncate" (default: texts past the model's limit are cut there, as the
        official package, with a warning naming them) or "window" (whole texts, through
        overlapping windows; texts within the limit score exactly as with "truncate").
    window_stride (int): with long_texts="window", content tokens between window starts
        (default: half a window, e.g. 255 for BERT/RoBERTa).
    all_layers (bool): score every layer (lists of per-layer lists).
    verbose (bool): progress bar.
    confidence_level (float): e.g. 0.95 adds the corpus means and their percentile bootstrap
        intervals: precision_mean, precision_ci ([low, high]), recall_mean, recall_ci, f1_mean, f1_ci.
    n_resamples (int), seed (int): of that bootstrap (default 1000, 0). Fewer than 12 predictions
        or 1,000 resamples give a warning: such an interval means little.
Returns:
    precision, recall, f1: one float per prediction; hashcode: the reproducibility hash;
    with confidence_level, the means and intervals above (one per layer with all_layers).
Settings can be given once, at load (then `compute()` needs none, as `evaluate.combine` calls it),
or to each `compute()` (which overrides the load's): every argument above but predictions,
references and seed (at load, `seed` is evaluate's own).
Examples:
    Settings at load; each prediction has one reference or several:
    >>> bertscore = evaluate.load("bertscore_metric", model_type="sentence-transformers/all-MiniLM-L6-v2")
    >>> results = bertscore.compute(predictions=["the cat sat on the mat", "hello world"],
    ...                             references=[["a cat sat on the mat", "the cat is sitting"], "hello there"])
    >>> [round(f1, 2) for f1 in results["f1"]]
    [0.98, 0.57]
    >>> results["hashcode"].split("_")[1:3]  # the layer and the idf mode; the whole hash names every setting
    ['L6', 'no-idf']

    One example at a time, under either spelling evaluate uses; a setting at compute overrides the load's:
    >>> bertscore.add(prediction="the cat sat on the mat", reference="a cat sat on the mat")
    >>> bertscore.add(predictions="hello world", references=["hello there", "hi world"])
    >>> results = bertscore.compute(num_layers=4)
    >>> [round(f1, 2) for f1 in results["f1"]], results["hashcode"].split("_")[1]
    ([0.96, 0.87], 'L4')
"""

_SCORER_POOL = ScorerPool(max_models=1)


def release() -> None:
    """Free every loaded encoder and cached embedding held by this module (GPU memory too)."""
    _SCORER_POOL.release()


def _validated(predictions: Any, references: Any) -> tuple[Any, Any]:
    """Predictions and references checked as `score()` checks them, before evaluate's Arrow
    conversion would stringify a NaN or iterate a bare string; bare string references become lists.
    """
    if predictions is None and references is None:
        return None, None
    if isinstance(predictions, str):
        raise InputTypeError(
            "predictions must be a list of strings, got one str: pass [prediction], or use "
            "add(prediction=..., reference=...) for a single example"
        )
    # two empty lists: a rank with no data (evaluate's distributed mode) still takes part
    return normalize_batch(predictions, references, "predictions", "references")


def _one_spelling(singular: Any, kwargs: dict[str, Any], name: str) -> Any:
    """`add()`'s example under `name` or `name + "s"` (taken out of `kwargs`), never both."""
    if name + "s" not in kwargs:
        return singular
    plural = kwargs.pop(name + "s")
    if singular is not None:
        raise TypeError(f"add() got both {name}= and {name}s=: pass the example once (add_batch takes a batch)")
    return plural


def _load_settings(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The scoring settings among `evaluate.load(...)`'s keywords (taken out of `kwargs`); a keyword
    that is neither a setting nor evaluate's is refused (evaluate itself would ignore it)."""
    settings = {name: kwargs.pop(name) for name in list(kwargs) if name in _LOAD_SETTINGS}
    unknown = [name for name in kwargs if name not in _EVALUATE_OPTIONS]
    if unknown:
        raise TypeError(
            f"evaluate.load(...) got {', '.join(map(repr, unknown))}, which is neither a scoring setting "
            f"({', '.join(sorted(_LOAD_SETTINGS))}) nor one of evaluate's options ({', '.join(sorted(_EVALUATE_OPTIONS))})"
        )
    return settings


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class BERTScoreMetric(evaluate.Metric):
    """BERTScore precision, recall and F1 per prediction, plus the reproducibility hash."""

    def _info(self) -> evaluate.MetricInfo:
        string_list = datasets.List(datasets.Value("string")) if hasattr(datasets, "List") else datasets.Sequence(datasets.Value("string"))
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            homepage="https://github.com/Tiiiger/bert_score",
            inputs_description=_KWARGS_DESCRIPTION,
            # One Features (not a list): evaluate can then take an empty add_batch from a rank with no data.
            features=datasets.Features({"predictions": datasets.Value("string"), "references": string_list}),
            codebase_urls=["https://github.com/Tiiiger/bert_score"],
            reference_urls=["https://arxiv.org/abs/1904.09675"],
        )

    def __init__(self, config_name: str | None = None, **kwargs: Any):
        """evaluate's options (cache_dir, experiment_id, ...), and scoring settings that every
        `compute()` then uses: `evaluate.load("bertscore_metric", model_type=..., num_layers=...)`."""
        self.scoring_settings = _load_settings(kwargs)
        super().__init__(config_name=config_name, **kwargs)

    def add(self, *, prediction: Any = None, reference: Any = None, **kwargs: Any) -> None:
        """Add one prediction (a string) and its reference(s) (a string or a list of strings), as
        `prediction=`/`reference=` or, as evaluate's `combine().add` passes them, `predictions=`/`references=`."""
        prediction = check_text(_one_spelling(prediction, kwargs, "prediction"), "prediction")
        reference = normalize_group(_one_spelling(reference, kwargs, "reference"), "reference")
        super().add(prediction=prediction, reference=reference, **kwargs)

    def add_batch(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> None:
        """Add a batch, checked as `score()` checks it; each bare string reference becomes a list."""
        predictions, references = _validated(predictions, references)
        super().add_batch(predictions=predictions, references=references, **kwargs)

    def compute(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> dict | None:
        """Score what was added (plus these inputs), checked as `score()` checks them."""
        predictions, references = _validated(predictions, references)
        locks_before = self.filelocks
        try:
            return super().compute(predictions=predictions, references=references, **{**self.scoring_settings, **kwargs})
        except BaseException:
            if self.filelocks is not locks_before:  # this call's _finalize ran: its files are ours to free
                self._release_cache_files()
            raise

    def _release_cache_files(self) -> None:
        """What evaluate does after a successful compute, done after a failed one too: evaluate
        leaves the cache file and its lock held when `_compute` raises, so the next `compute()`
        of this module waited a second for that lock, then wrote to a new file, leaving the old."""
        self.data = None
        for filelock, file_path in reversed(list(zip(self.filelocks or [], self.file_paths or []))):
            if os.path.exists(file_path):
                os.remove(file_path)
            filelock.release()

    def _compute(
        self,
        predictions: list[str],
        references: list[list[str]],
        lang: str | None = None,
        model_type: str | None = None,
        num_layers: int | None = None,
        verbose: bool = False,
        idf: Any = False,
        device: str | None = None,
        batch_size: int = 64,
        nthreads: int = 4,
        all_layers: bool = False,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        use_fast_tokenizer: bool = False,
        dtype: str | None = None,
        max_tokens_per_batch: int | None = None,
        cache_bytes: int | None = None,
        cache_device: str | None = None,
        long_texts: str = "truncate",
        window_stride: int | None = None,
        confidence_level: float | None = None,
        n_resamples: int = 1000,
        seed: int = 0,
    ) -> dict[str, Any]:
        if confidence_level is not None:  # checked before any model loads
            check_bootstrap_settings(n_resamples, seed, confidence_level, confidence_name="confidence_level")
            if len(predictions) == 1:
                raise ValueError("confidence_level needs at least 2 predictions for a bootstrap interval; got 1")
        scorer = _SCORER_POOL.get(
            model_type=model_type, num_layers=num_layers, all_layers=all_layers, lang=lang,
            device=device, dtype=dtype, idf=idf, batch_size=batch_size,
            rescale_with_baseline=rescale_with_baseline, baseline_path=baseline_path,
            max_tokens_per_batch=max_tokens_per_batch, use_fast_tokenizer=use_fast_tokenizer,
            nthreads=nthreads, cache_bytes=cache_bytes, cache_device=cache_device,
            long_texts=long_texts, window_stride=window_stride,
        )
        if len(predictions) == 0:
            return {"precision": [], "recall": [], "f1": [], "hashcode": scorer.hash}
        with spelled(EVALUATE):  # notes name options as compute() kwargs, at the user's compute() line
            precision, recall, f1 = scorer.score(predictions, references, verbose=verbose)
        result: dict[str, Any] = {
            "precision": precision.tolist(),
            "recall": recall.tolist(),
            "f1": f1.tolist(),
            "hashcode": scorer.hash,
        }
        if confidence_level is not None:
            cautions: list[str] = []  # few predictions or resamples: the same for every column, warned once
            for name, values in (("precision", precision), ("recall", recall), ("f1", f1)):
                # [N], or [K, N] with all_layers: one mean and interval per layer
                cis = [bootstrap_ci(row, n_resamples, confidence_level, seed, notes=cautions)
                       for row in values.reshape(-1, values.shape[-1])]
                means, intervals = [ci.mean for ci in cis], [[ci.low, ci.high] for ci in cis]
                result[f"{name}_mean"] = means if all_layers else means[0]
                result[f"{name}_ci"] = intervals if all_layers else intervals[0]
            for caution in dict.fromkeys(cautions):
                report(caution, None)
        return result


_EVALUATE_OPTIONS = frozenset(inspect.signature(evaluate.EvaluationModule.__init__).parameters) - {"self", "kwargs"}
# compute()'s settings, but for the inputs and evaluate's own `seed` (the bootstrap seed goes to compute())
_LOAD_SETTINGS = frozenset(inspect.signature(BERTScoreMetric._compute).parameters) - {"self", "predictions", "references", "seed"}

__all__ = ["BERTScoreMetric", "MODULE_VERSION", "bertscore_version", "release"]
