"""`cardrunner acp`: the Agent Client Protocol front end (one more subscriber of the run core)."""
