"""cardrunner: hand a Kanban card to an AI agent from inside the editor.

The package has no import-time side effects: the language server imports it on start-up,
and `anthropic`/`mcp` are imported lazily where they are used.
"""

__version__ = "0.1.0"
