"""The command line, `bertscore ...` (also `python -m bertscore`): one room per command.

- `main.py`: the entry point; parses `bertscore`'s options and dispatches.
- `options.py`: the options (parser, up-front checks) and the scorer they ask for (`build_scorer`).
- `score.py`: `-c/-r` (or `--input`): score pairs chunk by chunk, write rows; `rows.py`: their
  formats, the output plan, `--resume`.
- `compare.py`: `--systems`, several systems in one table with paired tests.
- `baseline.py`: `bertscore baseline`, a rescale baseline file from a corpus.
- `io.py`: what they share (line readers, naming files and lines, stderr); no command imports another.
"""

from .main import main, program
from .options import build_parser, build_scorer
from .rows import TSV_HEADER, Row, format_row
from .score import Summary

__all__ = ["main", "program", "build_parser", "build_scorer", "TSV_HEADER", "Row", "format_row", "Summary"]
