"""The Space's configuration: its model allow-list and limits, read from BERTSCORE_APP_* variables.

Environment: BERTSCORE_APP_MODELS (comma-separated allow-list), BERTSCORE_APP_DEFAULT_MODEL,
BERTSCORE_APP_MAX_CHARS, BERTSCORE_APP_MAX_ROWS, BERTSCORE_APP_MAX_REFS,
BERTSCORE_APP_MAX_UPLOAD_MB, BERTSCORE_APP_MAX_WAIT_S, BERTSCORE_APP_PAIRS_PER_S,
BERTSCORE_APP_MAX_BATCH_PAIRS, BERTSCORE_APP_QUEUE_SIZE, BERTSCORE_APP_CONCURRENCY,
BERTSCORE_APP_MAX_MODELS (encoders kept loaded), BERTSCORE_APP_DEVICE. A bad value is a
ValueError naming the variable, at start-up.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..sources import EMBEDDED_MODEL_NAME

DEFAULT_MODELS = (
    EMBEDDED_MODEL_NAME,
    "roberta-large",
    "microsoft/deberta-xlarge-mnli",
    "bert-base-multilingual-cased",
    "xlm-roberta-large",
    "distilbert-base-uncased",
    "bert-base-uncased",
)


def _env_int(env: dict[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as error:
        raise ValueError(f"{name}={raw!r} is not an integer") from error
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _env_seconds(env: dict[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as error:
        raise ValueError(f"{name}={raw!r} is not a number") from error
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {raw!r}")
    return value


@dataclass(frozen=True)
class AppConfig:
    """The app's model allow-list, default model and limits; `from_env` reads them from the environment."""

    models: tuple[str, ...]
    default_model: str
    max_chars: int = 2000
    max_rows: int = 1000
    max_refs: int = 10
    max_upload_mb: int = 5
    max_wait_s: float = 30.0  # a /compute request expected to wait longer is refused, with that wait
    pairs_per_s: float = 100.0  # scoring speed assumed until calls of a model have been measured
    max_batch_pairs: int = 512  # pairs per merged scoring call
    queue_size: int | None = None  # requests waiting at once; None: max_wait_s * pairs_per_s
    concurrency: int = 1
    max_models: int = 1
    device: str | None = None

    @property
    def max_waiting(self) -> int:
        """Requests that may wait at once: the most (of one pair at least) the server can answer
        within `max_wait_s` at `pairs_per_s`, unless BERTSCORE_APP_QUEUE_SIZE says otherwise."""
        return self.queue_size or max(1, math.ceil(self.max_wait_s * self.pairs_per_s))

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "AppConfig":
        env = dict(os.environ if env is None else env)
        models = [m.strip() for m in env.get("BERTSCORE_APP_MODELS", "").split(",") if m.strip()] or list(DEFAULT_MODELS)
        default = env.get("BERTSCORE_APP_DEFAULT_MODEL", "").strip() or models[0]
        if default not in models:
            models.insert(0, default)
        return cls(
            models=tuple(dict.fromkeys(models)),
            default_model=default,
            max_chars=_env_int(env, "BERTSCORE_APP_MAX_CHARS", 2000),
            max_rows=_env_int(env, "BERTSCORE_APP_MAX_ROWS", 1000),
            max_refs=_env_int(env, "BERTSCORE_APP_MAX_REFS", 10),
            max_upload_mb=_env_int(env, "BERTSCORE_APP_MAX_UPLOAD_MB", 5),
            max_wait_s=_env_seconds(env, "BERTSCORE_APP_MAX_WAIT_S", 30.0),
            pairs_per_s=_env_seconds(env, "BERTSCORE_APP_PAIRS_PER_S", 100.0),
            max_batch_pairs=_env_int(env, "BERTSCORE_APP_MAX_BATCH_PAIRS", 512),
            queue_size=_env_int(env, "BERTSCORE_APP_QUEUE_SIZE", 0) or None,
            concurrency=_env_int(env, "BERTSCORE_APP_CONCURRENCY", 1),
            max_models=_env_int(env, "BERTSCORE_APP_MAX_MODELS", 1),
            device=env.get("BERTSCORE_APP_DEVICE", "").strip() or None,
        )
