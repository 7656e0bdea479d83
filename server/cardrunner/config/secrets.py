"""Keep secrets out of all we write down, pass on or show: logs, tool output, diffs, messages.

A key can end up in text in many ways (a test prints the environment, an exception repeats a
header, the model writes it into a file). Rather than trusting every path, front ends pass text
through `redact` before storing or showing it, the sandbox never hands a secret-looking variable
to a command (`is_secret_name`), and the review refuses a change that would commit one
(`find_secrets`).

Text goes through one function, `shown`, before a terminal or an editor shows it. Model text,
tool output and file contents are not ours. An erase-line (`\x1b[2K`) or a carriage return can
hide a line of a diff behind a harmless-looking one; a bidi override reorders what a reviewer
reads. So every control character except newline and tab is shown as its escape (`\x1b[2K`,
`\r`, `\u202e`), and secrets are redacted, in this one place. The run log keeps the raw text
(JSON escapes it, and a resume needs it byte for byte).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # a bound only: the git layer shows text without loading pydantic
    from pydantic import BaseModel


SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
REDACTED = "[redacted]"
MIN_SECRET_LEN = 8
"""Shorter values are too likely to be ordinary words to be replaced everywhere."""

_SECRET_WORD = re.compile(
    r"(?:^|_)(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|APIKEY|PRIVATE|"
    r"COOKIE|SIGNATURE)S?(?:_|$)",
    re.IGNORECASE,
)
"""A variable whose name says it holds a secret (`GITHUB_TOKEN`, `DB_PASSWORD`, `X_API_KEY` …)."""

_CREDENTIAL_NAMES = re.compile(
    r"^(?:ANTHROPIC_|AWS_|AZURE_|ARM_|GOOGLE_|GCP_|GCLOUD_|CLOUDSDK_|DIGITALOCEAN_|HEROKU_|"
    r"DOCKER_|KUBE|VAULT_|OP_|SSH_AUTH_SOCK$|SSH_AGENT_PID$|GPG_AGENT|GNUPGHOME$|KRB5|NETRC$|"
    r"NPM_CONFIG_|PIP_INDEX_URL$|PIP_EXTRA_INDEX_URL$|UV_INDEX|TWINE_)",
    re.IGNORECASE,
)
"""Cloud credentials, agent sockets and package-index URLs (which carry tokens)."""

KEY_SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]+"
    r"|sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{32,}|[A-Za-z0-9]{40,})"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{35}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|glpat-[A-Za-z0-9_\-]{20,}"
    r"|eC1hY2Nlc3MtdG9rZW46[A-Za-z0-9+/]*={0,2}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)?"
)
"""Strings that are secrets whatever variable they came from: Anthropic, OpenAI, GitHub, AWS key
ids, Google, Slack and GitLab keys, a private key block, and `x-access-token:…` in base64 — the
Basic credential `actions/checkout` writes into `.git/config` always begins with those 20
characters."""

SECRET_AFTER = re.compile(
    r"(?P<lead>(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:basic|bearer|token)\s+)"
    r"(?P<secret>[A-Za-z0-9+/=._~\-]{8,})"
    r"|(?P<aws>(?i:aws_?secret_?access_?key|secret_?access_?key)[\"']?\s*[:=]\s*[\"']?)"
    r"(?P<awskey>[A-Za-z0-9/+]{40})"
    r"|(?P<url>[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:)(?P<password>[^/\s@]+)(?=@)"
)
"""Secrets known by what stands before them: an `Authorization:` header's credential, an AWS
secret key after its name, the password of a URL's userinfo. The lead-in is kept, so a reader
still sees what was there."""

_remembered: set[str] = set()
"""Secret values cardrunner met outside the environment (a token in `.git/config`)."""


def remember(*values: str) -> None:
    """Redact these values from now on, wherever they appear (too short ones are ignored)."""
    _remembered.update(v for v in (s.strip() for s in values) if len(v) >= MIN_SECRET_LEN)


def is_secret_name(name: str) -> bool:
    """True for a variable that must never be passed to code the model wrote."""
    return bool(_SECRET_WORD.search(name) or _CREDENTIAL_NAMES.match(name))


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of secret-named variables in `environ` (default: ours) and those `remember`
    was given, longest first."""
    env = os.environ if environ is None else environ
    values = {
        v.strip()
        for k, v in env.items()
        if (k in SECRET_ENV_VARS or _SECRET_WORD.search(k)) and len(v.strip()) >= MIN_SECRET_LEN
    }
    return sorted(values | _remembered, key=len, reverse=True)


def _keep_lead(match: re.Match[str]) -> str:
    lead = match.group("lead") or match.group("aws") or match.group("url")
    return f"{lead}{REDACTED}"


def redact(text: str) -> str:
    """`text` with every known secret value, every key-shaped string and every credential after
    its lead-in replaced: the one function for whatever cardrunner writes down or publishes
    (tool results, the run log, commit messages, pull-request bodies, job summaries)."""
    for value in secret_values():
        text = text.replace(value, REDACTED)
    return SECRET_AFTER.sub(_keep_lead, KEY_SHAPES.sub(REDACTED, text))


@dataclass(frozen=True)
class SecretHit:
    """A secret found in a file the run would commit: where, and what kind (never the value)."""

    path: str
    line: int
    kind: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}"


def find_secrets(path: str, text: str) -> list[SecretHit]:
    """Every line of `text` holding a secret value of our environment or a key-shaped string."""
    values = secret_values()
    hits: list[SecretHit] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if any(v in line for v in values):
            hits.append(SecretHit(path, number, "the value of a secret environment variable"))
        elif KEY_SHAPES.search(line):
            hits.append(SecretHit(path, number, "a string shaped like an API key or private key"))
    return hits


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""C0 and C1 controls but \\t and \\n, DEL, line separators and every bidi control."""

M = TypeVar("M", bound="BaseModel")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return {0x0D: "\\r", 0x1B: "\\x1b"}.get(code) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    )


def visible(text: str) -> str:
    """`text` with every control character written out; a CRLF line end is just a line end."""
    return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))


def shown(text: str) -> str:
    """What a terminal or an editor may show of `text`: redacted, controls made visible."""
    return visible(redact(text))


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_clean(v) for v in value)
    return value


def shown_model(model: M) -> M:
    """A copy of `model` (an event) with every string in it passed through `shown`."""
    return type(model).model_validate(_clean(model.model_dump()))
