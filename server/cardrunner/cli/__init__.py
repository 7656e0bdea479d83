"""`cardrunner` on the command line. Entry point: `cli.main.main`."""
