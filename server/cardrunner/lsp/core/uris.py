"""A `file:` URI as the resolved path the index keys cards by.

Its own module, importing only pygls: the server needs it to answer `initialize` (the workspace
root), before the card index and its parsers are loaded.
"""

from __future__ import annotations

from pathlib import Path

from pygls.uris import to_fs_path


def uri_to_path(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(path).resolve() if path else None
