"""The language server: `cardrunner lsp` (pygls, LSP over stdio). See `server.serve`."""
