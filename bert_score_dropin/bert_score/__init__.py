"""`import bert_score`, backed by bertscore (the drop-in; docs/existing-code.md).

Re-exports of `bertscore.dropin`: the official names with the official semantics. `__version__`
is 0.3.13+bertscore.<version>: which package produced the numbers, and >= 0.3.10 for evaluate.
`release_models()` frees the encoders kept for later calls.
"""

from bertscore import release_models
from bertscore.dropin import __version__

from . import utils
from .score import plot_example, score
from .scorer import BERTScorer

__all__ = ["score", "plot_example", "BERTScorer", "release_models", "utils", "__version__"]
