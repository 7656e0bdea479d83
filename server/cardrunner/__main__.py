"""`python -m cardrunner` is the `cardrunner` command."""

import sys

from cardrunner.cli.entry import main

sys.exit(main())
