"""`python -m bertscore.cli ...`: the command line, as `python -m bertscore`."""

import sys

from .main import main

sys.exit(main())
