"""What every feature of the language server stands on: the editor, the card index, diagnostics,
settings and the cards watcher."""
