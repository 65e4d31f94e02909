"""The official `bert_score` module surface over this package: what the drop-in re-exports.

The drop-in distribution (bert_score_dropin/, import name `bert_score`) is thin re-exports of
this room, so that code written for the official package (`bert_score.score`,
`bert_score.BERTScorer`, `bert_score.utils.get_hash`, `lang2model`, ...) runs unedited on
this package's scorer: the official positional order and keywords, the official hash format
(its version field naming this implementation, `official.IMPLEMENTATION_VERSION`), the
official tables. Scoring is `BERTScorer`'s; a scorer built here takes the encoder this process
already loaded (`models/shared.py`), so one-pair-per-call loops load the model once.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import sys

import torch

from ..models.devices import resolve_placement
from ..models.loading import load_model
from ..models.tables import DEFAULT_MULTILINGUAL_MODEL, LANG_TO_MODEL, MODEL_TO_LAYERS
from ..official import IMPLEMENTATION_VERSION, official_hash_text
from ..scorer import BERTScorer as _Scorer
from ..scoring.pipeline import Scores
from ..scoring.settings import lang_default_failure
from . import helpers as dropin_helpers
from .helpers import (  # noqa: F401 - the official names, re-exported by the drop-in
    bert_cos_score_idf, bert_encode, collate_idf, get_bert_embedding, get_idf_dict, get_model, get_tokenizer,
    greedy_cos_idf, padding, score_with_helpers, sent_encode,
)

if TYPE_CHECKING:  # for type checkers only: the figure type of an optional dependency
    from matplotlib.figure import Figure

__version__ = IMPLEMENTATION_VERSION

# The official tables under the official names. `lang2model` is a defaultdict, as the official one:
# an unknown language falls back to multilingual BERT. `model2layers` IS this package's table (the
# official one plus the embedded MiniLM), so that an entry a caller adds sets the default layer.
lang2model: defaultdict[str, str] = defaultdict(lambda: DEFAULT_MULTILINGUAL_MODEL, LANG_TO_MODEL)
model2layers: dict[str, int] = MODEL_TO_LAYERS

# The official package's internals that this one does not provide (SciBERT's download by wget):
# naming them gives an AttributeError saying so (see docs/existing-code.md).
OFFICIAL_INTERNALS = frozenset({"cache_scibert", "SCIBERT_URL_DICT", "process", "model_type_has_prefix_space"})


def internal_missing(module: str, name: str) -> AttributeError:
    """The error for `bert_score.<module>.<name>` that the drop-in does not provide."""
    if name in OFFICIAL_INTERNALS:
        return AttributeError(
            f"{module}.{name} is an internal helper of the official bert-score package that this drop-in "
            "(bertscore) does not provide: load models by their hub name or a local folder (for SciBERT: "
            "allenai/scibert_scivocab_uncased), or install the official package for it (docs/existing-code.md)")
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
    `lang2model`. Every keyword of `bertscore.BERTScorer` is taken too.

    The official privates: `_model` (the shared encoder cut at `num_layers`: no second copy) and
    `_tokenizer` for code that encodes its own batches, `_idf_dict`. As in the official scorer,
    `get_model` and `bert_cos_score_idf` are looked up when used, as globals of the module named by
    `helpers_module` (`bert_score.scorer` for the drop-in's scorer), so that a caller's
    `unittest.mock.patch` of either takes effect: the scorer then takes its encoder from that
    `get_model`, and scores through that `bert_cos_score_idf`."""

    helpers_module: str = __name__  # where `get_model` and `bert_cos_score_idf` are looked up at call time

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
        chosen = None  # the model `lang` chose: a load error says so (the user never named it)
        if model_type is None and isinstance(lang, str) and options.get("loaded_model") is None:
            model_type = chosen = lang2model[lang.lower()]  # the official lookup: edits of lang2model count
        make_model = self._official_helper("get_model")
        self._encoder_from_caller = make_model is not dropin_helpers.get_model and options.get("loaded_model") is None
        try:
            if self._encoder_from_caller and isinstance(model_type, str):
                # A caller's get_model (evaluate's tests patch it to load nothing): its encoder, this model's
                # tokenizer and settings; kept out of the shared encoders.
                placement = resolve_placement(device, options.get("dtype"))
                options["loaded_model"] = load_model(
                    model_type, num_layers, all_layers, *placement,
                    build_encoder=lambda layers: make_model(model_type, layers, all_layers))
            super().__init__(model_type, num_layers, batch_size, nthreads, all_layers, idf, idf_sents, device, lang,
                             rescale_with_baseline, baseline_path, use_fast_tokenizer, **options)
        except OSError as error:
            if chosen is None or repr(chosen) not in str(error):  # not the chosen model's load failure
                raise
            raise lang_default_failure(lang, chosen, error) from error

    def _official_helper(self, name: str) -> Any:
        """The official helper `name` as `helpers_module` names it now (a caller's patch counts)."""
        module = sys.modules.get(self.helpers_module)
        return getattr(module, name, None) or getattr(dropin_helpers, name)

    @property
    def _model(self) -> torch.nn.Module:
        """The encoder (the official private): cut at `num_layers`, its forward's first output is that
        layer's states. Shared by every scorer on the same settings: casting or moving it in place
        changes theirs too (as the official scorer's own model)."""
        return self.model.encoder

    @property
    def _tokenizer(self) -> Any:
        """The tokenizer (the official private): the ids `sent_encode` gives are the scorer's."""
        return self.model.tokenizer

    @property
    def _idf_dict(self) -> dict[int, float] | None:
        """Token id -> idf weight (the official private): None without idf, or when idf is per call."""
        return self.idf_dict if self.idf else None

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
        cos_score = self._official_helper("bert_cos_score_idf")
        if self._encoder_from_caller or cos_score is not dropin_helpers.bert_cos_score_idf:
            out = score_with_helpers(self, cos_score, cands, refs, verbose, batch_size)
        else:
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
