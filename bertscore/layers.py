"""Choosing a model's layer by measurement: per-layer agreement with human judgements.

`choose_layer(data, model_type)` scores a human-judgement set (`bertscore.judgements`) at every
layer k exactly as `score(..., num_layers=k)` does (`bertscore.layer_scores`), then reports per
layer how its scores agree with the humans, and whether the best layer beats the default:

- **direct scores**: Pearson r and Kendall tau-b of F1 (and of P and R) with the human scores,
  a percentile bootstrap interval of r (one set of seeded resamples for every layer), and
  Williams' test of "r(best) > r(default)" (one-sided, the test of the WMT metrics tasks for
  dependent correlations that share the human scores).
- **relative ranking** (better/worse pairs): the WMT Kendall-like tau (Concordant - Discordant)
  / all pairs, of F1 (and P and R), its bootstrap interval, and a paired approximate
  randomization test against the default on the per-pair concordance (`stats.compare_systems`).

The best layer is picked on the same data it is tested on, among all the others: its p-value is
also given Bonferroni-adjusted for the `K` layers that could have been picked (p x K, at most 1),
and only that adjusted p decides `significant`. The recommended layer is the best one when it
beats the default significantly, else the default (the layer published numbers use).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from .correlation import bootstrap_pearson_ci, concordance, kendall_tau_b, pearson, williams_test
from .inputs import InputError
from .judgements import DIRECT, Judgements, judgements_from_lists, read_judgements
from .layer_scores import COLUMNS, LayerScores, score_layers
from .models.tables import MODEL_TO_LAYERS
from .notes import report
from .scoring.settings import resolve_model_type
from .stats import check_bootstrap_settings, compare_systems, few_resamples_note

SIGNIFICANCE = 0.05
PERMUTATIONS = 10000


@dataclass(frozen=True)
class LayerReport:
    """What `choose_layer` measured; `to_dict()` is the JSON the CLI writes with --json."""

    model: str
    revision: str | None
    data: str
    kind: str  # "direct" (human scores) or "relative" (better/worse pairs)
    segments: int
    columns: dict[str, Any]
    idf: bool
    total_layers: int
    default_layer: int
    default_from: str  # "the official table" or "its last layer: no official default"
    best_layer: int
    recommended_layer: int
    significant: bool
    test: dict[str, Any]
    scoring: dict[str, Any]
    bootstrap: dict[str, Any]
    layers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def measure(self) -> str:
        """The key of each layer's headline agreement: "pearson" (direct) or "kendall" (relative)."""
        return "pearson" if self.kind == DIRECT else "kendall"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_layer(model_type: str, total_layers: int) -> tuple[int, str]:
    """The layer `score()` uses without num_layers, and where it comes from."""
    if model_type in MODEL_TO_LAYERS:
        return MODEL_TO_LAYERS[model_type], "the official table"
    return total_layers, "its last layer: no official default"


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _direct_layers(scores: dict[str, np.ndarray], human: np.ndarray, default: int, n_resamples: int,
                   confidence: float, seed: int) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
    """Per-layer r, tau and intervals; the best layer; Williams' test of each layer against the default."""
    f1 = scores["f1"].astype(np.float64)
    low, high = bootstrap_pearson_ci(f1, human, n_resamples, confidence, seed)
    layers = []
    for k in range(len(f1)):
        entry: dict[str, Any] = {"layer": k}
        for column in COLUMNS:
            values = scores[column][k].astype(np.float64)
            agreement = {"pearson": _finite(pearson(values, human)), "kendall": _finite(kendall_tau_b(values, human))}
            if column == "f1":
                entry.update(agreement, pearson_ci=[_finite(low[k]), _finite(high[k])])
            else:
                entry[column] = agreement
        layers.append(entry)
    best = _best(layers, "pearson", default)
    r_default = layers[default]["pearson"]
    for k, entry in enumerate(layers):
        entry["vs_default"] = None
        if k != default and entry["pearson"] is not None and r_default is not None:
            between = pearson(f1[k], f1[default])
            if math.isfinite(between):
                test = williams_test(entry["pearson"], r_default, max(-1.0, min(1.0, between)), len(human))
                entry["vs_default"] = {"difference": entry["pearson"] - r_default,
                                       "statistic": _finite(test.statistic), "p_value": test.p_value}
    test = {"name": "Williams' test for dependent correlations, one-sided: r(layer) > r(default)",
            "measure": "Pearson r of F1", "df": len(human) - 3}
    return layers, best, test


def _relative_layers(better: dict[str, np.ndarray], worse: dict[str, np.ndarray], default: int, n_resamples: int,
                     confidence: float, seed: int) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
    """Per-layer WMT tau with intervals; the best layer; a paired permutation test against the default."""
    signs = {column: [concordance(b, w) for b, w in zip(better[column], worse[column])] for column in COLUMNS}
    f1 = signs["f1"]
    # A layer that ranks every pair as the default does has nothing to test (and would be warned about).
    distinct = [k for k in range(len(f1)) if k == default or (f1[k] != f1[default]).any()]
    rows = dict(zip(distinct, compare_systems(
        {str(k): f1[k] for k in distinct}, baseline=str(default), method="permutation",
        n_resamples=PERMUTATIONS, confidence=confidence, seed=seed, ci_resamples=n_resamples, notes=[])))
    layers = []
    for k in range(len(f1)):
        row = rows.get(k, rows[default])
        concordant = int((f1[k] > 0).sum())
        entry: dict[str, Any] = {
            "layer": k, "kendall": row.mean, "kendall_ci": [row.low, row.high],
            "concordant": concordant, "discordant": len(f1[k]) - concordant,
            **{column: {"kendall": float(signs[column][k].mean())} for column in ("precision", "recall")},
            "vs_default": None,
        }
        if k != default:
            entry["vs_default"] = ({"difference": row.difference, "statistic": None, "p_value": row.p_value}
                                   if k in rows else {"difference": 0.0, "statistic": None, "p_value": 1.0})
        layers.append(entry)
    test = {"name": f"paired approximate randomization of each pair's concordance (two-sided, {PERMUTATIONS} "
                    "resamples)", "measure": "WMT relative-ranking Kendall tau of F1"}
    return layers, _best(layers, "kendall", default), test


def _best(layers: list[dict[str, Any]], measure: str, default: int) -> int:
    """The layer with the highest agreement: on a tie the default if it is among them, else the lowest."""
    scored = [(entry[measure], entry["layer"]) for entry in layers if entry[measure] is not None]
    if not scored:
        raise InputError("the scores are constant at every layer (all texts empty?): no agreement to measure")
    top = max(value for value, _ in scored)
    tied = [layer for value, layer in scored if value == top]
    return default if default in tied else min(tied)


def agreement_report(
    measured: LayerScores, judgements: Judgements, *, n_resamples: int = 1000, confidence: float = 0.95,
    seed: int = 0, notes: list[str] | None = None,
) -> LayerReport:
    """The report from every layer's scores (`score_layers`) of `judgements`."""
    check_bootstrap_settings(n_resamples, seed, confidence)
    default, default_from = default_layer(measured.model_type, measured.total_layers)
    if not 0 <= default <= measured.total_layers:  # pragma: no cover - the official table is consistent
        raise InputError(f"the default layer {default} of {measured.model_type!r} is not one of its layers")
    caution = few_resamples_note(n_resamples, "interval")
    if caution:
        report(caution, notes)
    if judgements.kind == DIRECT:
        assert measured.scores is not None and judgements.human is not None
        layers, best, test = _direct_layers(measured.scores, judgements.human, default, n_resamples, confidence, seed)
    else:
        assert measured.better is not None and measured.worse is not None
        layers, best, test = _relative_layers(measured.better, measured.worse, default, n_resamples, confidence, seed)
    comparisons = measured.total_layers  # the layers other than the default that could have been best
    against = layers[best]["vs_default"]
    p_value = None if against is None else against["p_value"]
    adjusted = None if p_value is None else min(1.0, p_value * comparisons)
    significant = best != default and adjusted is not None and adjusted < SIGNIFICANCE
    test.update(best=best, default=default, statistic=None if against is None else against["statistic"],
                p_value=p_value, p_value_adjusted=adjusted, comparisons=comparisons, level=SIGNIFICANCE)
    return LayerReport(
        model=measured.model_type, revision=measured.revision, data=judgements.source, kind=judgements.kind,
        segments=judgements.size, columns=dict(judgements.columns), idf=measured.idf,
        total_layers=measured.total_layers, default_layer=default, default_from=default_from, best_layer=best,
        recommended_layer=best if significant else default, significant=significant, test=test,
        scoring={"one_pass": measured.one_pass, "probe_layer": measured.probe_layer,
                 "probe_difference": measured.probe_difference},
        bootstrap={"n_resamples": n_resamples, "confidence": confidence, "seed": seed}, layers=layers,
    )


def choose_layer(
    data: str | os.PathLike[str] | Judgements,
    model_type: str | None = None,
    *,
    lang: str | None = None,
    human_column: str | None = None,
    better_column: str | None = None,
    worse_column: str | None = None,
    candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None,
    idf: bool = False,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    device: str | torch.device | None = None,
    dtype: str | None = None,
    batch_size: int | None = 64,
    max_tokens_per_batch: int | None = None,
    chunk_size: int = 1024,
    verbose: bool = False,
    notes: list[str] | None = None,
) -> LayerReport:
    """Which layer of `model_type` agrees best with the human judgements in `data` (see the module).

    `data`: a CSV/TSV/JSONL/JSON table (direct scores with a `human_column`, default the first of
    `judgements.HUMAN_COLUMNS`; or relative ranking with `better`/`worse` columns), or the
    `Judgements` of `judgements_from_lists`. Every input is checked before any model loads.
    Notes on the texts go to `notes` (else warnings). `verbose`: a progress bar.
    """
    model_type = resolve_model_type(model_type, lang)
    check_bootstrap_settings(n_resamples, seed, confidence)
    if not isinstance(data, Judgements):
        data = read_judgements(data, human_column=human_column, better_column=better_column,
                               worse_column=worse_column, candidate_column=candidate_column,
                               reference_columns=reference_columns)
    measured = score_layers(data, model_type, idf=idf, lang=lang, device=device, dtype=dtype, batch_size=batch_size,
                            max_tokens_per_batch=max_tokens_per_batch, chunk_size=chunk_size, verbose=verbose,
                            notes=notes)
    return agreement_report(measured, data, n_resamples=n_resamples, confidence=confidence, seed=seed, notes=notes)


__all__ = ["LayerReport", "agreement_report", "choose_layer", "default_layer", "judgements_from_lists"]
