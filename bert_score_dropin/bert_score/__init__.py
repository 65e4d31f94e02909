"""`import bert_score`, backed by bertscore (the drop-in; docs/existing-code.md).

Re-exports of `bertscore.dropin`: the official names with the official semantics, the helpers
the official package re-exports from here included (`from bert_score import get_model,
bert_cos_score_idf`). `__version__` is 0.3.13+bertscore.<version>: which package produced the
numbers, and >= 0.3.10 for evaluate. `release_models()` frees the encoders kept for later calls.
"""

from bertscore import release_models
from bertscore.dropin import __version__

from . import utils
from .score import plot_example, score
from .scorer import (
    BERTScorer, bert_cos_score_idf, get_bert_embedding, get_hash, get_idf_dict, get_model, get_tokenizer,
    lang2model, model2layers, sent_encode,
)

__all__ = [
    "score", "plot_example", "BERTScorer", "release_models", "utils", "__version__", "bert_cos_score_idf",
    "get_bert_embedding", "get_hash", "get_idf_dict", "get_model", "get_tokenizer", "lang2model", "model2layers",
    "sent_encode",
]


def __getattr__(name: str):
    from bertscore.dropin import internal_missing

    raise internal_missing(__name__, name)
