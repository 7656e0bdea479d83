"""The tools the model can call: built-in workspace tools and tools from MCP servers."""
