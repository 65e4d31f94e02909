"""`bert_score.scorer`: `BERTScorer` and the helpers it looks up when used (re-exported from bertscore.dropin).

As in the official module, `get_model` and `bert_cos_score_idf` are this module's globals and the
scorer reads them at call time: `unittest.mock.patch("bert_score.scorer.get_model")` takes effect.
"""

from bertscore.dropin import BERTScorer as _DropinScorer
from bertscore.dropin import (
    bert_cos_score_idf, get_bert_embedding, get_hash, get_idf_dict, get_model, get_tokenizer, internal_missing,
    lang2model, model2layers, sent_encode,
)


class BERTScorer(_DropinScorer):
    __doc__ = _DropinScorer.__doc__
    helpers_module = __name__


def __getattr__(name: str):
    raise internal_missing(__name__, name)
