"""Model ports: the Anthropic Messages API, and a scripted stand-in for tests and replays."""
