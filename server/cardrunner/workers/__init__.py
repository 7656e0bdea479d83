"""Runs in worker processes: the server's scheduler and handle, the worker program, the wire, the spare."""
