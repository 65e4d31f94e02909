"""Rescale baselines, as users import them: the tables (read, check, look up, rescale, write) of
`bertscore.scoring.baseline_tables` and their computation, `compute_baseline` of `bertscore.calibrate`.

A door, not a room: nothing inside the package imports this module (the scorer and the rooms
below it import `baseline_tables`; `calibrate` needs a scorer, so it sits above them).
"""

from __future__ import annotations

from .calibrate import compute_baseline
from .scoring import baseline_tables as _tables
from .scoring.baseline_tables import *  # noqa: F401,F403  (the public names of the tables, listed in its __all__)

__all__ = [*_tables.__all__, "compute_baseline"]
