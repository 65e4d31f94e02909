"""`bert_score.BERTScorer` (re-exported from bertscore.dropin)."""

from bertscore.dropin import BERTScorer

__all__ = ["BERTScorer"]
