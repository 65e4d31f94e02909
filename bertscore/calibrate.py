"""Compute a rescale baseline for any model: the official procedure, on the existing scorer.

The official authors' note (bert_score, journal/rescale_baseline.md): from a large monolingual
corpus, group sentences at random into candidate/reference pairs, score every pair with the
model at every layer, and take the mean P, R and F per layer. Here, precisely:

1. strip every sentence; drop empty ones and exact duplicates (the first occurrence stays, in
   order): `prepare_corpus`;
2. draw the pairs with `numpy.random.default_rng(seed).permutation(n)`: pair i is
   (candidate = sentence perm[i], reference = sentence perm[num_pairs + i]), so no sentence is
   paired with itself and each is used at most once (`random_pairs`; default num_pairs = n // 2);
3. score every pair at all layers (0 = the embeddings) with no idf, through the scorer's chunked,
   bounded-memory path (`BERTScorer.score_pairs`);
4. per layer and column: the mean over pairs (float64) and its standard error
   (sample standard deviation / sqrt(pairs)), so a user sees how many pairs are enough.

(The official script also kept only lines under 32 words of the first million; a user who wants
that filter applies it to the sentences first.)
"""

from __future__ import annotations

import dataclasses
import logging
import numbers
from typing import Any, Iterable

import numpy as np
import torch

from .digests import text_digest
from .inputs import InputError, InputTypeError
from .scorer import BERTScorer
from .scoring.baseline_tables import BaselineTable
from .version import __version__
from .wording import a_type

logger = logging.getLogger(__name__)

# Settings that would change what a baseline means: the procedure fixes them.
_FIXED_SETTINGS = ("all_layers", "num_layers", "idf", "idf_sents", "rescale_with_baseline", "baseline_path")


@dataclasses.dataclass(frozen=True)
class Corpus:
    """Distinct non-empty sentences (stripped, first occurrences in order) and what was dropped."""

    sentences: list[str]
    empty: int
    duplicates: int


def prepare_corpus(sentences: Iterable[str]) -> Corpus:
    """Strip each sentence, drop empty ones and exact duplicates (what the scorer sees is stripped)."""
    kept: dict[str, None] = {}
    empty = duplicates = 0
    for index, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise InputTypeError(f"sentence {index} is {a_type(sentence)}, not a string")
        text = sentence.strip()
        if not text:
            empty += 1
        elif text in kept:
            duplicates += 1
        else:
            kept[text] = None
    return Corpus(list(kept), empty, duplicates)


def max_pairs(num_sentences: int) -> int:
    """How many disjoint pairs `num_sentences` distinct sentences allow."""
    return num_sentences // 2


def random_pairs(num_sentences: int, num_pairs: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidate and reference indices of `num_pairs` disjoint random pairs (default: as many as fit).

    One permutation from `numpy.random.default_rng(seed)`: its first `num_pairs` entries are the
    candidates, the next `num_pairs` the references, so every index appears at most once.
    """
    limit = max_pairs(num_sentences)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InputError(f"seed must be an integer >= 0 (it fixes the random pairing), got {seed!r}")
    if num_pairs is not None and (isinstance(num_pairs, bool) or not isinstance(num_pairs, numbers.Integral)):
        raise InputError(f"num_pairs must be an integer (or None: as many as fit), got {num_pairs!r}")
    if num_sentences < 2:
        raise InputError(f"a baseline needs at least 2 distinct non-empty sentences, got {num_sentences}")
    if num_pairs is None:
        num_pairs = limit
    if not 1 <= num_pairs <= limit:
        raise InputError(
            f"num_pairs={num_pairs} is out of range: {num_sentences} distinct sentences allow 1..{limit} pairs "
            "(each sentence is used at most once)"
        )
    order = np.random.default_rng(seed).permutation(num_sentences)
    return order[:num_pairs], order[num_pairs: 2 * num_pairs]


def mean_and_standard_error(pair_scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean over pairs and its standard error, in float64: pair_scores [n, ...] -> two [...] tensors.

    The standard error is the sample standard deviation (n - 1) / sqrt(n); NaN when n == 1.
    """
    values = pair_scores.double()
    count = values.shape[0]
    mean = values.mean(dim=0)
    if count < 2:
        return mean, torch.full_like(mean, float("nan"))
    return mean, values.std(dim=0, correction=1) / count ** 0.5


def all_layers_scorer(scorer: BERTScorer | None = None, model_type: str | None = None, lang: str | None = None,
                      **settings: Any) -> BERTScorer:
    """A no-idf scorer of every layer, without an embedding cache (each sentence is seen once).

    From `scorer`: reuses its loaded encoder, device and dtype. A scorer on all layers, or on its
    model's last layer (an encoder truncated at its own depth is whole), serves; an encoder cut
    below its last layer cannot give the upper layers, which a baseline file needs.
    """
    for name in _FIXED_SETTINGS:
        if name in settings:
            raise InputError(
                f"{name}= is fixed by the baseline procedure (every layer, no idf, raw scores); leave it out"
            )
    if scorer is None:
        return BERTScorer(model_type=model_type, lang=lang, all_layers=True, cache_bytes=0, **settings)
    if model_type is not None and model_type != scorer.model_type:
        raise InputError(f"model_type={model_type!r} differs from the scorer's {scorer.model_type!r}: pass one of them")
    loaded = scorer.model
    if not loaded.all_layers:
        if loaded.num_layers != loaded.total_layers:
            raise InputError(
                f"this scorer's encoder is cut at layer {loaded.num_layers} of {loaded.total_layers}, and a "
                "baseline needs every layer: pass BERTScorer(model_type=..., all_layers=True), a scorer on the "
                f"last layer (num_layers={loaded.total_layers}), or model_type={scorer.model_type!r} instead"
            )
        loaded = dataclasses.replace(loaded, all_layers=True)  # the same encoder, asked for every hidden state
    defaults = dict(device=scorer.device, dtype=scorer.dtype, batch_size=scorer.batch_size,
                    max_tokens_per_batch=scorer.embedder.max_tokens_per_batch, chunk_size=scorer.chunk_size)
    return BERTScorer(model_type=scorer.model_type, lang=lang or scorer.lang, loaded_model=loaded, all_layers=True,
                      cache_bytes=0, **{**defaults, **settings})


def compute_baseline(
    sentences: Iterable[str],
    model_type: str | None = None,
    num_pairs: int | None = None,
    seed: int = 0,
    lang: str | None = None,
    scorer: BERTScorer | None = None,
    verbose: bool = False,
    **scorer_settings: Any,
) -> BaselineTable:
    """The rescale baseline of a model from a monolingual corpus, by the official procedure.

    `sentences`: any iterable of texts (empty lines and duplicates are dropped first). The model
    is `model_type` (or the default for `lang`), or an existing `scorer`'s encoder, reused.
    `num_pairs` defaults to half the distinct sentences; `seed` fixes the pairing, so the same
    corpus, seed and settings give the same table. `scorer_settings`: device, dtype,
    batch_size, max_tokens_per_batch, chunk_size. `verbose` shows a progress bar (pairs).
    Write the result with `bertscore.baselines.write_baseline`.
    """
    corpus = prepare_corpus(sentences)
    candidates, references = random_pairs(len(corpus.sentences), num_pairs, seed)
    calibrator = all_layers_scorer(scorer, model_type, lang, **scorer_settings)
    logger.info(
        "baseline of %s: %d distinct sentences (%d empty and %d duplicate lines dropped), %d pairs, seed %d",
        calibrator.model_type, len(corpus.sentences), corpus.empty, corpus.duplicates, len(candidates), seed,
    )
    texts = corpus.sentences
    pair_scores = calibrator.score_pairs(
        [texts[i] for i in candidates.tolist()], [texts[i] for i in references.tolist()], verbose=verbose
    )  # [pairs, layers + 1, 3], raw, no idf
    if not torch.isfinite(pair_scores).all():
        bad = int((~torch.isfinite(pair_scores)).flatten(1).any(dim=1).nonzero()[0])
        raise ValueError(
            f"pair {bad} ({texts[int(candidates[bad])]!r} / {texts[int(references[bad])]!r}) scored NaN or inf "
            f"with {calibrator.model_type}; the baseline would be meaningless"
        )
    mean, standard_error = mean_and_standard_error(pair_scores)
    settings = calibrator.settings
    return BaselineTable(
        mean=mean, standard_error=standard_error, model=calibrator.model_type, revision=calibrator.model.revision,
        lang=lang or calibrator.lang, seed=seed, num_pairs=len(candidates), num_sentences=len(texts),
        corpus_sha256=text_digest(texts), scorer_hash=calibrator.hash, device=calibrator.device.type,
        versions={"bertscore": __version__, "transformers": settings.transformers_version,
                  "torch": settings.torch_version},
    )


__all__ = [
    "Corpus", "prepare_corpus", "max_pairs", "random_pairs", "mean_and_standard_error",
    "all_layers_scorer", "compute_baseline",
]
