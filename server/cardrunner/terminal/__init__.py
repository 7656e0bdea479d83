"""The terminal front end: the live view and the terminal approver."""
