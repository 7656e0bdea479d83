"""The server's features, one small class each; `lsp.server` fans requests out to them."""
