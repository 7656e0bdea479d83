"""Tools from MCP servers. Entry point: `tools.mcp.hub.McpHub`."""
