"""Git, as every part of cardrunner uses it: snapshots, diffs, commits, branches and hunks."""
