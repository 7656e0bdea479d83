"""`initializationOptions["client"]` is what the client asks for, never a setting."""

from __future__ import annotations

from typing import Any

import pytest

from cardrunner.lsp.core.client import ClientOptions, split_client_options


@pytest.mark.parametrize(
    ("given", "own", "rest"),
    [
        (None, ClientOptions(), None),
        ({"model": "m"}, ClientOptions(), {"model": "m"}),
        ({"client": {"notifications": True}, "model": "m"}, ClientOptions(True), {"model": "m"}),
        ({"client": {"notifications": "yes"}}, ClientOptions(False), {}),
        ({"client": ["notifications"]}, ClientOptions(False), {}),
        ("not an object", ClientOptions(), "not an object"),
        ({"client": {"notifications": True, "nativeReview": True}}, ClientOptions(True, True), {}),
        ({"client": {"nativeReview": True}}, ClientOptions(), {}),  # it needs the notifications
        ({"client": {"notifications": True, "nativeReview": 1}}, ClientOptions(True), {}),
    ],
)
def test_split_client_options(given: Any, own: ClientOptions, rest: Any) -> None:
    assert split_client_options(given) == (own, rest)
