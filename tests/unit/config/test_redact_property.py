"""redact, generated: no token of a known shape, and no secret value of the environment or of a
repository's config, survives in any surrounding text; ordinary text (hashes, UUIDs, base64 of
non-secrets, git SHAs) passes untouched."""

from __future__ import annotations

import base64
import os
import string
import uuid
from unittest import mock

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cardrunner.config import secrets
from cardrunner.config.secrets import REDACTED, redact, remember

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits


def chars(alphabet: str, size: int, most: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=size, max_size=size if most is None else most)


TOKENS = st.one_of(
    st.builds("gh{}_{}".format, st.sampled_from("pousr"), chars(ALNUM, 36, 40)),
    st.builds("github_pat_{}".format, chars(ALNUM + "_", 82)),
    st.builds("sk-ant-api03-{}".format, chars(ALNUM + "_-", 20, 95)),
    st.builds("sk-{}".format, chars(ALNUM, 48)),
    st.builds("sk-proj-{}".format, chars(ALNUM + "_-", 40, 160)),
    st.builds("{}{}".format, st.sampled_from(["AKIA", "ASIA"]), chars(UPPER, 16)),
    st.builds("AIza{}".format, chars(ALNUM + "_-", 35)),
    st.builds("xox{}-{}".format, st.sampled_from("abprs"), chars(ALNUM + "-", 10, 60)),
    st.builds(
        lambda t: base64.b64encode(f"x-access-token:{t}".encode()).decode(),
        chars(ALNUM + "_", 20, 60),
    ),
    st.builds(
        "-----BEGIN {}PRIVATE KEY-----\n{}\n-----END {}PRIVATE KEY-----".format,
        st.sampled_from(["", "RSA ", "OPENSSH ", "EC "]),
        chars(ALNUM + "+/=\n", 1, 200),
        st.sampled_from(["", "RSA ", "OPENSSH ", "EC "]),
    ),
)
"""Every key shape cardrunner knows, as the services issue them."""

AROUND = st.text(max_size=40)
"""Any text at all, to either side."""

LEADS = st.sampled_from(
    [
        "AUTHORIZATION: basic {}",
        "Authorization: Bearer {}",
        '"authorization": "token {}"',
        "aws_secret_access_key = {}",
        "https://x-access-token:{}@github.com/o/r.git",
        "git clone https://bob:{}@example.com/x",
    ]
)
"""Where an arbitrary secret is known by what stands before it."""


@settings(max_examples=600, deadline=None)
@given(before=AROUND, token=TOKENS, after=AROUND)
def test_no_shaped_token_survives_in_any_text(before: str, token: str, after: str) -> None:
    assume(token not in before + after)
    with mock.patch.dict(os.environ, {}, clear=True):
        out = redact(f"{before}{token}{after}")
    assert token not in out
    assert REDACTED in out


@settings(max_examples=300, deadline=None)
@given(before=AROUND, lead=LEADS, secret=chars(ALNUM, 40), after=AROUND)
def test_a_secret_after_its_lead_in_never_survives(
    before: str, lead: str, secret: str, after: str
) -> None:
    assume(secret not in before + after)  # the text around may not hold it by chance
    with mock.patch.dict(os.environ, {}, clear=True):
        out = redact(before + lead.format(secret) + after)
    assert secret not in out
    assert lead.split("{}")[0] in out  # the reader still sees what was there


@settings(max_examples=300, deadline=None)
@given(
    before=AROUND,
    value=st.text(alphabet=string.printable.strip(), min_size=8, max_size=60),
    after=AROUND,
    name=st.sampled_from(["GITHUB_TOKEN", "ANTHROPIC_API_KEY", "NPM_TOKEN", "DB_PASSWORD"]),
)
def test_the_exact_value_of_a_secret_variable_never_survives(
    before: str, value: str, after: str, name: str
) -> None:
    assume(value.strip() not in REDACTED)
    with mock.patch.dict(os.environ, {name: value}, clear=True):
        assert value.strip() not in redact(before + value + after)


def test_a_remembered_value_is_redacted_everywhere_from_then_on() -> None:
    value = "an-odd-password-from-git-config"
    try:
        assert redact(f"x {value} y") == f"x {value} y"
        remember(value, "short")
        assert redact(f"x {value} y") == f"x {REDACTED} y"
        assert redact("short and sweet") == "short and sweet"
    finally:
        secrets._remembered.discard(value)


ORDINARY = st.one_of(
    chars("0123456789abcdef", 40),  # a git SHA
    chars("0123456789abcdef", 64),  # a sha256
    st.builds(lambda b: str(uuid.UUID(bytes=b)), st.binary(min_size=16, max_size=16)),
    st.builds(
        lambda t: base64.b64encode(t.encode()).decode(),
        st.text(max_size=80).filter(lambda t: not t.startswith("x-access-token:")),
    ),
    st.from_regex(r"[a-z][a-z0-9_]{0,20}(-[a-z0-9]{1,8}){0,6}", fullmatch=True),
    st.sampled_from(
        [
            "risk-assessment-framework-version-two-long",
            "task-runner-for-cardrunner-and-friends",
            "see http://localhost:8080/path@v2 and ssh://git@github.com/o/r",
            "the Authorization header",
            "AKIA is a prefix",
        ]
    ),
)


@settings(max_examples=600, deadline=None)
@given(words=st.lists(ORDINARY, min_size=1, max_size=6))
def test_ordinary_text_is_left_alone(words: list[str]) -> None:
    text = " ".join(words)
    with mock.patch.dict(os.environ, {}, clear=True):
        assert redact(text) == text
