"""Keep secrets out of everything we write down or pass on: logs, tool output, diffs, messages.

A key can end up in text in many ways (a test prints the environment, an exception repeats a
header, the model writes it into a file). Rather than trusting every path, front ends pass text
through `redact` before storing or showing it, the sandbox never hands a secret-looking variable
to a command (`is_secret_name`), and the review refuses a change that would commit one
(`find_secrets`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

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
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|glpat-[A-Za-z0-9_\-]{20,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
"""Strings that are secrets whatever variable they came from (API keys, tokens, private keys)."""


def is_secret_name(name: str) -> bool:
    """True for a variable that must never be passed to code the model wrote."""
    return bool(_SECRET_WORD.search(name) or _CREDENTIAL_NAMES.match(name))


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of secret-named variables in `environ` (default: ours), longest first."""
    env = os.environ if environ is None else environ
    values = {
        v.strip()
        for k, v in env.items()
        if (k in SECRET_ENV_VARS or _SECRET_WORD.search(k)) and len(v.strip()) >= MIN_SECRET_LEN
    }
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every secret value of our environment and every key-shaped string replaced."""
    for value in secret_values():
        text = text.replace(value, REDACTED)
    return KEY_SHAPES.sub(REDACTED, text)


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
