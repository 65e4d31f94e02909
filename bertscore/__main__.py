"""`python -m bertscore ...` runs the command line (also under torchrun)."""

import sys

from .cli import main

sys.exit(main())
