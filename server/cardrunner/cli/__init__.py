"""`cardrunner` on the command line. Entry point: `cli.entry.main`."""
