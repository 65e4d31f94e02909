"""The official package's command modules (`bert-score`, `bert-score-show`), on bertscore."""
