"""`bert_score.utils`: the official helpers and tables (re-exported from bertscore.dropin).

The official names and arguments (`get_model`, `get_tokenizer`, `sent_encode`, `get_idf_dict`,
`get_bert_embedding`, `greedy_cos_idf`, `bert_cos_score_idf`, ...) over this package's models and
matching; SciBERT's wget download (`cache_scibert`) is not provided: naming it raises an
AttributeError that says so.
"""

from bertscore.dropin import (
    bert_cos_score_idf, bert_encode, collate_idf, get_bert_embedding, get_hash, get_idf_dict, get_model,
    get_tokenizer, greedy_cos_idf, internal_missing, lang2model, model2layers, padding, sent_encode,
)

__all__ = []  # as the official module: `from bert_score.utils import *` imports nothing


def __getattr__(name: str):
    raise internal_missing(__name__, name)
