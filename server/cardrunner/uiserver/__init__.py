"""A UI automation MCP server for Textual apps: `python -m cardrunner.uiserver --app mod:Class`.

`server` holds the MCP tools, `child` the handle on the driver process, `driver` (with `actions`
and `widgets`) the process that runs the app headless, `protocol` the messages between them.
"""
