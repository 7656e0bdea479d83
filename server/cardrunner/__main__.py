"""`python -m cardrunner` is the `cardrunner` command.

Started without `-P`, `python -m` puts the working folder first on `sys.path`: in a workspace, a
`yaml.py` the repository ships would be imported instead of the library, by the language server
itself. Editors start the server with `-P` (docs/editors.md); for a configuration that does not,
the working folder is taken off the path before anything else is imported (only this package
was found there, and only if the workspace has no folder of that name: docs/security.md).
"""

import os
import sys

if not sys.flags.safe_path and sys.path and os.path.abspath(sys.path[0] or ".") == os.getcwd():
    del sys.path[0]

from cardrunner.cli.entry import main  # after the path is made safe

sys.exit(main())
