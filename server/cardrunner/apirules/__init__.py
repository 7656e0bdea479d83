"""apirules/ (see README.md)."""
