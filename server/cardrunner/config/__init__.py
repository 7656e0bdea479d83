"""Settings, workspace paths and secrets: the foundation every other layer reads."""
