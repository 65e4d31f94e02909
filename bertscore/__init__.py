"""BERTScore: exact, fast, bounded-memory scoring of text generation with contextual embeddings."""

from . import moved
from .models.shared import release_models
from .models.tables import LANG_TO_MODEL, MODEL_TO_LAYERS
from .scorer import BERTScorer, score
from .scoring.idf import TokenWeights
from .sources import EMBEDDED_MODEL_NAME
from .version import __version__

moved.install()

__all__ = ["BERTScorer", "score", "release_models", "TokenWeights", "EMBEDDED_MODEL_NAME", "LANG_TO_MODEL", "MODEL_TO_LAYERS", "__version__"]
