"""`bert_score.score` and `bert_score.plot_example` (re-exported from bertscore.dropin)."""

from bertscore.dropin import plot_example, score

__all__ = ["score", "plot_example"]


def __getattr__(name: str):
    from bertscore.dropin import internal_missing

    raise internal_missing(__name__, name)
