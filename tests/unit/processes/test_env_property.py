"""The environment filter over 10,000 generated environments: nothing secret ever passes."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from cardrunner.config.secrets import is_secret_name
from cardrunner.processes.sandbox import BASE_ENV, filter_env

SECRET_SHAPES = [
    "GITHUB_TOKEN", "NPM_TOKEN", "X_API_KEY", "STRIPE_SECRET", "DB_PASSWORD", "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_CLIENT_SECRET", "GOOGLE_APPLICATION_CREDENTIALS",
    "SSH_AUTH_SOCK", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
    "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", "HF_TOKEN", "OPENAI_API_KEY", "MY_PRIVATE_KEY",
]  # fmt: skip
_NAME = st.from_regex(re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,20}"), fullmatch=True)
_SECRETISH = st.builds(
    lambda pre, word, post: f"{pre}{word}{post}",
    st.sampled_from(["", "MY_", "CI_", "APP_"]),
    st.sampled_from(["TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIALS", "AUTH"]),
    st.sampled_from(["", "_FILE", "_ID", "S"]),
)
_NAMES = st.one_of(
    _NAME, _SECRETISH, st.sampled_from(SECRET_SHAPES), st.sampled_from(sorted(BASE_ENV))
)
_VALUE = st.text(max_size=30).filter(lambda v: "\x00" not in v)


@settings(max_examples=10_000, deadline=None)
@given(
    environ=st.dictionaries(_NAMES, _VALUE, max_size=12),
    extra=st.lists(_NAMES, max_size=4),
)
def test_only_allowed_names_pass_unchanged_and_no_secret_name_ever(
    environ: dict[str, str], extra: list[str]
) -> None:
    out = filter_env(environ, extra)
    for name, value in out.items():
        assert environ[name] == value  # passed unchanged, never invented
        assert name in BASE_ENV or name.startswith("LC_") or name in extra
        assert not is_secret_name(name)
        assert not value.startswith("()")
    for name in SECRET_SHAPES:
        assert name not in out
    for name, value in environ.items():  # and everything allowed does pass
        allowed = name in BASE_ENV or name.startswith("LC_") or name in extra
        if allowed and not is_secret_name(name) and not value.startswith("()"):
            assert out[name] == value


def test_the_named_secret_shapes_are_all_secret() -> None:
    assert all(is_secret_name(n) for n in SECRET_SHAPES)
    assert not any(is_secret_name(n) for n in ("PATH", "HOME", "LANG", "TERM", "VIRTUAL_ENV"))
