"""`python -m cardrunner` is the `cardrunner` command."""

import sys

from cardrunner.cli import main

sys.exit(main())
