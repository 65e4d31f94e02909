"""`python -m bertscore.cli ...`: the command line, as `python -m bertscore`."""

import sys

from .main import program

sys.exit(program())
