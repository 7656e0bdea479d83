"""redact: secrets from the environment and key-shaped strings never survive."""

from __future__ import annotations

import pytest

from cardrunner.config.secrets import redact


def test_environment_values_are_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "my-secret-value-123")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token-abcdefgh")
    text = "key=my-secret-value-123 auth: Bearer token-abcdefgh, again my-secret-value-123"
    assert redact(text) == "key=[redacted] auth: Bearer [redacted], again [redacted]"


def test_short_values_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "abc")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    assert redact("abc is a common word; abcdef too") == "abc is a common word; abcdef too"


def test_key_shaped_strings_are_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    text = 'x-api-key: sk-ant-api03-Ab_9-zz\n{"key": "sk-ant-XYZ"} sk-ant- alone'
    assert redact(text) == 'x-api-key: [redacted]\n{"key": "[redacted]"} sk-ant- alone'


def test_value_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "first-secret-1")
    assert redact("first-secret-1") == "[redacted]"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "second-secret-2")
    assert redact("first-secret-1 second-secret-2") == "first-secret-1 [redacted]"
