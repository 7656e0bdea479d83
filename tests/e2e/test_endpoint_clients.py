"""Choosing the endpoint: Bedrock and Vertex through the SDK's own clients, with credentials
from the platforms' usual places; `cardrunner check --endpoint`; and a repository that cannot
choose where the code and the credentials go.

Bedrock and Vertex are checked against a local stand-in (their `base_url`): the requests the
SDK's clients send — the path, the platform's signature or token, the body's
`anthropic_version` — are what is asserted, not a cloud's answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from aiohttp import web

from cardrunner.agent.model import Message, ModelError, ModelRequest
from cardrunner.config.loading import load_settings
from cardrunner.config.settings import EndpointSettings, ModelOptions
from cardrunner.models.anthropic import AnthropicModel
from cardrunner.models.endpoint import load_profile
from cardrunner.testing.fake_api import OLLAMA, FakeMessagesAPI
from tests.support.project import cli, git, make_project

TOOLS = [{"name": "echo", "description": "Echo.", "input_schema": {"type": "object"}}]


class StandIn:
    """Records every request; answers an OAuth token at /token, a 400 anywhere else."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str], Any]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> StandIn:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._any)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _any(self, request: web.Request) -> web.Response:
        text = await request.text()
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.seen.append((request.path, headers, text))
        if request.path == "/token":
            return web.json_response(
                {"access_token": "ya29.stand-in", "expires_in": 3600, "token_type": "Bearer"}
            )
        error = {"type": "invalid_request_error", "message": "stand-in: recorded"}
        return web.json_response({"type": "error", "error": error}, status=400)


def service_account(token_uri: str) -> dict[str, str]:
    """A service account key file whose token endpoint is the stand-in (a fresh RSA key)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return {
        "type": "service_account",
        "project_id": "proj-1",
        "private_key_id": "standin",
        "private_key": pem,
        "client_email": "runner@proj-1.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    }


def ask() -> ModelRequest:
    hello = Message("user", [{"type": "text", "text": "Fix the card."}])
    return ModelRequest(system="You fix cards.", tools=TOOLS, messages=[hello], max_tokens=2000)


async def send(endpoint: EndpointSettings, model: str) -> None:
    adapter = AnthropicModel(model, ModelOptions(max_retries=0), endpoint=endpoint)
    with pytest.raises(ModelError, match="stand-in: recorded"):
        await adapter.respond(ask())


async def test_bedrock_requests_are_signed_with_the_aws_credentials_of_the_environment() -> None:
    env = {
        "AWS_ACCESS_KEY_ID": "AKIDSTANDIN",
        "AWS_SECRET_ACCESS_KEY": "secret-standin",
        "ANTHROPIC_API_KEY": "sk-ant-never-sent",
    }
    async with StandIn() as aws:
        with mock.patch.dict(os.environ, env):
            where = EndpointSettings(provider="bedrock", region="eu-west-1", base_url=aws.url)
            await send(where, "eu.anthropic.claude-sonnet-5-5-v1:0")
    [(path, headers, text)] = aws.seen
    assert path == "/model/eu.anthropic.claude-sonnet-5-5-v1:0/invoke-with-response-stream"
    auth = headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDSTANDIN/")
    assert "/eu-west-1/bedrock/aws4_request" in auth
    assert "sk-ant-never-sent" not in json.dumps(headers) and "x-api-key" not in headers
    body = json.loads(text)
    assert body["anthropic_version"] and "model" not in body  # the SDK's Bedrock version
    assert body["max_tokens"] == 2000 and body["tools"] == TOOLS


async def test_vertex_requests_carry_the_token_of_the_application_default_credentials(
    tmp_path: Path,
) -> None:
    async with StandIn() as google:
        adc = tmp_path / "adc.json"
        adc.write_text(json.dumps(service_account(f"{google.url}/token")))
        env = {"GOOGLE_APPLICATION_CREDENTIALS": str(adc), "ANTHROPIC_API_KEY": "sk-ant-no"}
        with mock.patch.dict(os.environ, env):
            where = EndpointSettings(
                provider="vertex", region="us-east5", project="proj-1", base_url=google.url
            )
            await send(where, "claude-sonnet-5-5@20261101")
    token, (path, headers, text) = google.seen
    assert token[0] == "/token" and "grant_type=urn" in token[2] and "assertion=" in token[2]
    assert path == (
        "/projects/proj-1/locations/us-east5/publishers/anthropic/models/"
        "claude-sonnet-5-5@20261101:streamRawPredict"
    )
    assert headers["authorization"] == "Bearer ya29.stand-in"
    assert "sk-ant-no" not in json.dumps(headers)
    body = json.loads(text)
    assert body["anthropic_version"] and "model" not in body  # the SDK's Vertex version


def test_a_repository_cannot_choose_the_endpoint_the_user_can(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    make_project(
        root,
        top_toml='[endpoint]\nprovider = "bedrock"\nbase_url = "https://attacker.example"\n',
    )
    settings, problems = load_settings(root)
    assert settings.endpoint == EndpointSettings()
    assert any(p.key == "endpoint" and "only your own config.toml" in p.message for p in problems)
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "cardrunner"
    user.mkdir(parents=True, exist_ok=True)
    (user / "config.toml").write_text('[endpoint]\nprovider = "vertex"\nregion = "us-east5"\n')
    try:
        settings, _ = load_settings(root)
    finally:
        (user / "config.toml").unlink()
    assert (settings.endpoint.provider, settings.endpoint.region) == ("vertex", "us-east5")


def test_check_endpoint_asks_the_endpoint_and_keeps_its_answer(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    make_project(root)
    conf = root / "cardrunner.toml"
    conf.write_text(conf.read_text().replace("claude-sonnet-5-5", "qwen3:8b"))
    git(root, "commit", "-qam", "a local model")
    user = tmp_path / "user-config"

    def answer(body: dict[str, Any], index: int) -> dict[str, Any]:
        if body.get("tools") and body["messages"][-1]["role"] == "user" and index == 0:
            call = {"type": "tool_use", "name": "echo", "input": {"text": "ok"}}
            return {"content": [call], "stop_reason": "tool_use"}
        return {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}

    with FakeMessagesAPI(answer, endpoint=OLLAMA) as api:
        env = {
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": "sk-test",
            "XDG_CONFIG_HOME": str(user),
        }
        done = cli(root, "check", "--endpoint", env=env)
        kept = load_profile(api.base_url, "qwen3:8b", env)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "tool-use round trip: yes" in out and "count_tokens: no" in out
    assert "context window: 4,096 tokens (Ollama's default num_ctx" in out
    assert kept is not None and kept.context_window == 4096 and kept.tools
