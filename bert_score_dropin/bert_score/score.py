"""`bert_score.score` and `bert_score.plot_example`, and the helpers the official module imports
(re-exported from bertscore.dropin)."""

from bertscore.dropin import (
    bert_cos_score_idf, get_bert_embedding, get_hash, get_idf_dict, get_model, get_tokenizer, lang2model,
    model2layers, plot_example, score, sent_encode,
)

__all__ = ["score", "plot_example"]


def __getattr__(name: str):
    from bertscore.dropin import internal_missing

    raise internal_missing(__name__, name)
