"""record/ (see README.md)."""
