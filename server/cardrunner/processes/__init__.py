"""Processes a run starts: commands in their own groups, the ledger of those groups, the sandbox."""
