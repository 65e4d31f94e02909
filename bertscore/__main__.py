"""`python -m bertscore ...` runs the command line (also under torchrun)."""

import sys

from .cli import program

sys.exit(program())
