"""`python -m cardrunner` is the `cardrunner` command."""

import sys

from cardrunner.cli.main import main

sys.exit(main())
