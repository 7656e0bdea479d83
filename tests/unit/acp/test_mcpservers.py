"""The client's MCP servers as run settings: beside the project's, literal, SSE left out."""

from __future__ import annotations

from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from cardrunner.acp.clientside import client_servers
from cardrunner.config.settings import Settings
from cardrunner.config.settingsfiles import McpServer


def test_stdio_and_http_servers_join_the_projects_and_a_taken_name_stays_the_projects() -> None:
    passed = [
        McpServerStdio(
            name="tools", command="/bin/srv", args=["-v"], env=[EnvVariable(name="K", value="${X}")]
        ),
        HttpMcpServer(
            type="http", name="web", url="http://127.0.0.1:1/mcp",
            headers=[HttpHeader(name="Authorization", value="Bearer t")],
        ),
        McpServerStdio(name="own", command="/bin/other", args=[], env=[]),
        SseMcpServer(type="sse", name="old", url="http://127.0.0.1:1/sse", headers=[]),
    ]  # fmt: skip
    servers = client_servers(passed)
    assert list(servers.servers) == ["tools", "web", "own"]
    assert servers.remarks and "'old'" in servers.remarks[0] and "SSE" in servers.remarks[0]
    tools = servers.servers["tools"]
    assert (tools.command, tools.args, tools.env) == ("/bin/srv", ["-v"], {"K": "${X}"})
    assert tools.from_client and not tools.users_own and not tools.required
    assert servers.servers["web"].headers == {"Authorization": "Bearer t"}
    project = Settings(mcp={"own": McpServer(command="/bin/project")})
    merged, left_out = servers.into(project)
    assert merged.mcp["own"].command == "/bin/project" and "'own'" in left_out[0]
    assert set(merged.mcp) == {"own", "tools", "web"} and project.mcp.keys() == {"own"}
