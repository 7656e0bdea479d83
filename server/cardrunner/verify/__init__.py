"""What the runner verifies itself: its own builds and tests, its record of calls, a review's scope."""
