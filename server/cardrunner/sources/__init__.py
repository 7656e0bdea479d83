"""sources/ (see README.md)."""
