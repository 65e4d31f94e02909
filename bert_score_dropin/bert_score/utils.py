"""`bert_score.utils`: the official public helpers and tables (re-exported from bertscore.dropin).

The official package's internal steps (get_bert_embedding, greedy_cos_idf, ...) are not
provided: naming one raises an AttributeError that says so.
"""

from bertscore.dropin import (
    get_hash, get_idf_dict, get_model, get_tokenizer, internal_missing, lang2model, model2layers, sent_encode,
)

__all__ = ["get_hash", "get_idf_dict", "get_model", "get_tokenizer", "lang2model", "model2layers", "sent_encode"]


def __getattr__(name: str):
    raise internal_missing(__name__, name)
