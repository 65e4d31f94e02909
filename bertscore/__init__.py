"""BERTScore: exact, fast, bounded-memory scoring of text generation with contextual embeddings."""

from . import moved
from .models.shared import release_models
from .models.tables import LANG_TO_MODEL, MODEL_TO_LAYERS
from .scorer import BERTScorer, score
from .scoring.idf import TokenWeights
from .sources import EMBEDDED_MODEL_NAME
from .version import __version__

moved.install()

__all__ = ["BERTScorer", "score", "release_models", "TokenWeights", "EMBEDDED_MODEL_NAME", "LANG_TO_MODEL", "MODEL_TO_LAYERS",
           "metric_path", "__version__"]


def metric_path() -> str:
    """The path of the evaluate module installed with this package, `bertscore_metric.py`:
    `evaluate.load(bertscore.metric_path(), **settings)` loads the metric from any folder, offline.

    The file sits beside the package folder, in site-packages as in a clone (an editable install).
    """
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "bertscore_metric.py"
    if not path.is_file():
        raise FileNotFoundError(f"the evaluate module bertscore_metric.py is not beside the bertscore package "
                                f"({path.parent}): reinstall the package, e.g. pip install -e . in a clone")
    return str(path)
