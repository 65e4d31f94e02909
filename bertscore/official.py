"""The official `bert_score.BERTScorer` surface: its attribute and method names, on our scorer.

`baseline_vals`, `idf_dict`, `compute_idf`, `official_hash` (the official hash format, for
tools that parse it) and `plot_example`, so that code written for the official package runs
unchanged. A base class of `BERTScorer`: it reads the scorer's `pipeline` and options only.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Sequence

import torch

from .scoring.idf import TokenWeights
from .scoring.settings import Settings
from .version import __version__

if TYPE_CHECKING:  # for type checkers only: the figure type of an optional dependency
    from matplotlib.figure import Figure

OFFICIAL_RELEASE = "0.3.13"  # the official release whose numbers and names this package reproduces
# This implementation as the official hash's version field and the drop-in's `bert_score.__version__`
# names it: the official release it reproduces, then this package (a PEP 440 local version, so that
# `bert-score>=0.3.10` still holds), so that a reported hash tells which package produced the numbers.
IMPLEMENTATION_VERSION = f"{OFFICIAL_RELEASE}+bertscore.{__version__}"


def official_hash_text(
    model: str, num_layers: int, idf: Any, rescale_with_baseline: bool, use_custom_baseline: bool,
    use_fast_tokenizer: bool,
) -> str:
    """The official hash format (the official `bert_score.utils.get_hash`, same arguments), with
    IMPLEMENTATION_VERSION as its version field:
    `{model}_L{k}_{idf|no-idf}_version={v}(hug_trans={t})[-rescaled|-custom-rescaled][_fast-tokenizer]`."""
    import transformers

    code = "{}_L{}{}_version={}(hug_trans={})".format(
        model, num_layers, "_idf" if idf else "_no-idf", IMPLEMENTATION_VERSION, transformers.__version__
    )
    if rescale_with_baseline:
        code += "-custom-rescaled" if use_custom_baseline else "-rescaled"
    if use_fast_tokenizer:
        code += "_fast-tokenizer"
    return code


def weights_as_dict(weights: TokenWeights) -> defaultdict[int, float]:
    """Token weights as the official `idf_dict` (a defaultdict): ids past the table weigh what the
    official get_idf_dict gives them, log((M + 1) / 1) (the table's default; 0 where it has none)."""
    default = 0.0 if weights.default is None else float(weights.default)
    return defaultdict(lambda: default, {i: float(w) for i, w in enumerate(weights.table.tolist())})


class OfficialSurface:
    """The official names; a subclass provides `pipeline` and the options named below."""

    pipeline: Any  # a pipeline.Pipeline (its `settings` are replaced by compute_idf)
    model_type: str
    num_layers: int
    rescale_with_baseline: bool
    baseline_path: str | None
    use_fast_tokenizer: bool

    @property
    def _settings(self) -> Settings:
        return self.pipeline.settings

    @property
    def baseline_vals(self) -> torch.Tensor | None:
        """The official attribute name of `baseline`."""
        return self._settings.baseline

    @property
    def idf_dict(self) -> dict[int, float] | None:
        """Token id -> weight, as the official attribute (a defaultdict); None when idf is per call."""
        weights = self._settings.idf_weights
        return None if weights is None else weights_as_dict(weights)

    def compute_idf(self, sents: Sequence[str]) -> None:
        """Fix idf weights from `sents` for every later call (the official method); the hash follows."""
        self.pipeline.settings = self._settings.with_idf(True, sents)

    def official_hash(self) -> str:
        """The official package's hash format for these settings, for tools that parse it (see
        `official_hash_text`; its version field names this implementation). It names less than
        `hash` (no revision, dtype, baseline or idf source): prefer `hash`."""
        return official_hash_text(
            self.model_type, self.num_layers, self._settings.idf_mode != "no-idf", self.rescale_with_baseline,
            self.baseline_path is not None, self.use_fast_tokenizer,
        )

    def plot_example(self, candidate: str, reference: str, fname: str = "") -> Figure:
        """Heatmap of one pair's token similarities (the official method); saved when `fname` is given."""
        from .plot import plot_example  # matplotlib is optional (the `app` extra): imported on use

        return plot_example(self, candidate, reference, fname=fname)
