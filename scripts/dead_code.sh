#!/usr/bin/env bash
# Dead code in cardrunner itself: vulture reads the package, the tests, the benchmarks and the
# scripts (so a name only they use counts as used) and reports only what is unused in server/.
set -uo pipefail
cd "$(dirname "$0")/.."
found=$(.venv/bin/vulture | grep '^server/' || true)
if [ -n "$found" ]; then
  echo "unused code (remove it, or name a framework's use in [tool.vulture] of pyproject.toml):"
  echo "$found"
  exit 1
fi
echo "no unused code in server/"
