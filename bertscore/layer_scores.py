"""Every layer's scores of a judgement set, each exactly as `score(..., num_layers=k)` gives it.

For a plain stack of layers, the hidden states of one all-layers pass are what an encoder cut at
layer k outputs, so one pass scores every layer (`all_layers=True`). An encoder with something
after its stack (the final norm of T5, Pegasus, Blenderbot, mBART, ModernBERT, ...) applies it to
whatever layer it is cut at, so its all-layers row k is not `num_layers=k`. Which case a model is
is measured, not looked up by family: a probe (the first rows of the data and two fixed pairs) is
scored by the all-layers encoder and by one cut at layer K - 1; if they differ, every layer is
scored by its own encoder cut at k (K + 1 passes), one at a time, so memory holds one encoder.

Texts stream in chunks (`Judgements.chunks`); only the scores are kept: [layers, rows] float32 per
column. idf, when asked, is counted over every reference of the set first (the weights a single
`score(..., idf=True)` call over the whole set uses), then passed to every call.
"""

from __future__ import annotations

import gc
import logging
import re
from dataclasses import dataclass
from itertools import islice
from typing import Any, Iterator

import numpy as np
import torch
from tqdm.auto import tqdm

from .inputs import InputError
from .judgements import RELATIVE, Chunk, Judgements
from .models.families import count_layers
from .notes import report
from .scorer import BERTScorer
from .scoring.idf import TokenWeights
from .sources import load_config, resolve_source

logger = logging.getLogger(__name__)

PROBE_ROWS = 16
PROBE_PAIRS = (
    ("The committee postponed the vote until next week.", "The vote was put off by the committee for a week."),
    ("A small bird sat on the old wooden fence.", "the weather was cold and grey all day"),
)
# Scores of the all-layers row and of the cut encoder within this are the same computation
# (batching moves float32 scores by about 1e-7); a final norm moves them by far more.
PROBE_TOLERANCE = {"float32": 1e-5, "bfloat16": 1e-3, "float16": 1e-3}
COLUMNS = ("precision", "recall", "f1")


@dataclass
class LayerScores:
    """Scores [layers, rows] per column (layer k = `num_layers=k`), and how they were computed.

    `scores[column]` for direct judgements; `better[column]` / `worse[column]` for relative
    ranking. `one_pass`: one all-layers pass served (else one pass per layer); `probe_difference`:
    the largest score difference the probe measured at `probe_layer`.
    """

    model_type: str
    revision: str | None
    total_layers: int
    one_pass: bool
    probe_layer: int
    probe_difference: float
    scores: dict[str, np.ndarray] | None
    better: dict[str, np.ndarray] | None
    worse: dict[str, np.ndarray] | None
    idf: bool
    all_layers_scorer: BERTScorer | None  # kept for a caller that reuses it (a baseline); None per layer


def model_layers(model_type: str) -> int:
    """How many layers `model_type` has, from its config alone (no weights loaded); InputError when
    it has none to choose among (or its config does not say)."""
    config = load_config(resolve_source(model_type)[0])
    try:
        total = count_layers(config)
    except InputError as error:
        raise InputError(f"{error}: it has no layers to choose among (choosing a layer needs an encoder "
                         "with a stack of layers)") from None
    if total < 1:
        raise InputError(f"{model_type!r} has {total} transformer layers: there is no layer to choose "
                         "(layer 0 is the embeddings alone)")
    return total


def _probe(judgements: Judgements) -> tuple[list[str], list[list[str]]]:
    first = next(judgements.chunks(PROBE_ROWS), None)
    candidates = list(first.candidates) if first is not None else []
    groups = [list(g) for g in first.references] if first is not None else []
    return candidates + [c for c, _ in PROBE_PAIRS], groups + [[r] for _, r in PROBE_PAIRS]


def _passes_equal(all_layers: BERTScorer, settings: dict[str, Any], judgements: Judgements,
                  layer: int) -> float:
    """The largest difference between all-layers row `layer` and an encoder cut at `layer`, on the probe."""
    candidates, groups = _probe(judgements)
    whole = torch.stack(all_layers.score(candidates, groups, notes=[]))[:, layer]
    single = torch.stack(BERTScorer(num_layers=layer, **settings).score(candidates, groups, notes=[]))
    return float((whole - single).abs().max())


def _idf_weights(scorer: BERTScorer, judgements: Judgements, chunk_size: int) -> TokenWeights:
    """idf over every reference of the set (each a document), counted as the chunks stream by."""
    references = (ref for chunk in judgements.chunks(chunk_size) for group in chunk.references for ref in group)
    documents = (ids for batch in iter(lambda: list(islice(references, chunk_size)), [])
                 for ids in scorer.pipeline.document_ids(batch))
    model = scorer.model
    return TokenWeights.from_documents(documents, model.vocab_size, model.zero_weight_ids, label="idf")


_PLACE = re.compile(r"(candidates|references)\[(\d+)\](?:\[(\d+)\])?")


def _rows_named(note: str, offset: int, column: str) -> str:
    """A scorer note about one chunk, its places named as rows of the set: `candidates[3]` of a
    chunk from row 2048 is `row 2052 (candidate)`, `references[3][1]` is `row 2052 (reference 2)`."""

    def place(match: re.Match[str]) -> str:
        row = f"row {offset + int(match.group(2)) + 1}"
        if match.group(1) == "candidates":
            return f"{row} ({column})"
        return f"{row} (reference {int(match.group(3)) + 1})" if match.group(3) else f"{row} (reference)"

    return _PLACE.sub(place, note)


def _score_chunk(scorer: BERTScorer, chunk: Chunk, weights: TokenWeights | None, judgements: Judgements,
                 notes: list[str] | None) -> list[torch.Tensor]:
    """P, R, F of one chunk ([layers, rows] or [rows]; relative ranking: the better rows, then the
    worse ones, scored in two calls that share the references' embeddings through the cache).
    `notes` gets the notes with their rows named, each once."""
    sides = [(chunk.candidates, judgements.columns.get("candidate", "candidate"))]
    if chunk.worse is not None:
        sides = [(chunk.candidates, judgements.columns.get("better", "better")),
                 (chunk.worse, judgements.columns.get("worse", "worse"))]
    parts, said = [], []
    for candidates, column in sides:
        call_notes: list[str] = []
        parts.append(scorer.score(candidates, chunk.references, weights=weights, notes=call_notes))
        said.extend(_rows_named(note, chunk.offset, column) for note in call_notes)
    if notes is not None:
        notes.extend(dict.fromkeys(said))
    return [torch.cat([part[i] for part in parts], dim=-1) for i in range(3)]


def score_layers(
    judgements: Judgements,
    model_type: str,
    *,
    idf: bool = False,
    lang: str | None = None,
    device: str | torch.device | None = None,
    dtype: str | None = None,
    batch_size: int | None = 64,
    max_tokens_per_batch: int | None = None,
    chunk_size: int = 1024,
    verbose: bool = False,
    notes: list[str] | None = None,
    keep_scorer: bool = False,
    one_pass_only: str | None = None,
) -> LayerScores:
    """Every layer's P, R, F of the judged rows, layer k as `score(..., num_layers=k)` (see the module).

    Notes on the texts (empty, truncated, ...) are given once, with their rows named (a warning,
    or into `notes`). `keep_scorer`: keep the all-layers scorer in the result (one-pass models).
    `one_pass_only`: what needs one pass (e.g. a rescale baseline); a model that needs a pass per
    layer is then an InputError, raised after the probe and before any scoring.
    """
    total = model_layers(model_type)
    # Relative ranking scores the better and the worse outputs of a chunk in two calls: the cache keeps
    # the references' embeddings between them. For direct scores a call embeds each distinct text of
    # its chunk once anyway: a cache would only copy every layer's embeddings.
    cache = {} if judgements.kind == RELATIVE else {"cache_bytes": 0}
    settings: dict[str, Any] = dict(model_type=model_type, lang=lang, device=device, dtype=dtype,
                                    batch_size=batch_size, max_tokens_per_batch=max_tokens_per_batch, **cache)
    all_layers = BERTScorer(all_layers=True, **settings)
    probe_layer = max(0, total - 1)
    difference = _passes_equal(all_layers, settings, judgements, probe_layer)
    one_pass = difference <= PROBE_TOLERANCE.get(all_layers.dtype, 1e-3)
    logger.info("%s: all-layers row %d %s num_layers=%d on the probe (largest difference %.2g): %s",
                model_type, probe_layer, "equals" if one_pass else "differs from", probe_layer, difference,
                "one pass scores every layer" if one_pass else "scoring each layer with its own encoder")
    if one_pass_only and not one_pass:
        raise InputError(
            f"{one_pass_only}: {model_type} has something after its stack of layers (a final norm): its all-layers "
            f"row {probe_layer} differs from num_layers={probe_layer} (by {difference:.2g} on a probe), and a rescale "
            "baseline is computed from the all-layers pass (the official procedure), so its rows would not fit "
            "num_layers=k; choose the layer without it, and rescale only after checking what the baseline means here"
        )
    weights = _idf_weights(all_layers, judgements, chunk_size) if idf else None
    revision = all_layers.model.revision
    sides = 2 if judgements.kind == RELATIVE else 1
    store = [{c: np.empty((total + 1, judgements.size), dtype=np.float32) for c in COLUMNS} for _ in range(sides)]
    passes: Iterator[tuple[list[int], BERTScorer]]
    if one_pass:
        passes = iter([(list(range(total + 1)), all_layers)])
    else:
        del all_layers  # one encoder at a time from here
        passes = ((([k], BERTScorer(num_layers=k, **settings)) for k in range(total + 1)))
    with tqdm(total=judgements.size * (1 if one_pass else total + 1), disable=not verbose,
              desc=f"layers of {model_type}", unit="row") as progress:
        for first_pass, (layers, scorer) in enumerate(passes):
            for chunk in judgements.chunks(chunk_size):
                chunk_notes: list[str] = []
                columns = _score_chunk(scorer, chunk, weights, judgements, chunk_notes)
                if first_pass == 0:  # the texts' notes are the same at every layer: said once
                    for note in chunk_notes:
                        report(note, notes)
                count = len(chunk.candidates)
                rows = slice(chunk.offset, chunk.offset + count)
                for name, values in zip(COLUMNS, columns):
                    values = values.reshape(len(layers), -1).numpy()
                    for side in range(sides):
                        store[side][name][layers, rows] = values[:, side * count:(side + 1) * count]
                progress.update(count)
            if not one_pass:
                del scorer
                gc.collect()  # the layer's encoder goes before the next one loads (a large model: twice the memory)
    kept = all_layers if one_pass and keep_scorer else None
    return LayerScores(
        model_type=model_type, revision=revision, total_layers=total, one_pass=one_pass, probe_layer=probe_layer,
        probe_difference=difference, scores=store[0] if sides == 1 else None,
        better=store[0] if sides == 2 else None, worse=store[1] if sides == 2 else None, idf=idf,
        all_layers_scorer=kept,
    )


__all__ = ["COLUMNS", "LayerScores", "model_layers", "score_layers"]
