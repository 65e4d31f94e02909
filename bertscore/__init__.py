"""BERTScore: exact, fast, bounded-memory scoring of text generation with contextual embeddings."""

from .idf import TokenWeights
from .model_tables import LANG_TO_MODEL, MODEL_TO_LAYERS
from .scorer import BERTScorer, score
from .shared_models import release_models
from .sources import EMBEDDED_MODEL_NAME
from .version import __version__

__all__ = ["BERTScorer", "score", "release_models", "TokenWeights", "EMBEDDED_MODEL_NAME", "LANG_TO_MODEL", "MODEL_TO_LAYERS", "__version__"]
