"""board/ (see README.md)."""
