#!/usr/bin/env bash
# Dead code in cardrunner itself: vulture reads the package, the tests, the benchmarks and the
# scripts (so a name only they use counts as used) and reports only what is unused in server/.
set -euo pipefail
cd "$(dirname "$0")/.."
vulture="${VULTURE:-.venv/bin/vulture}"
report=$("$vulture" || true)  # vulture exits 3 when it finds anything; the filter decides
if [ -z "$report" ] && ! "$vulture" --version >/dev/null 2>&1; then
  echo "vulture is not installed (pip install -e '.[dev]')" >&2
  exit 2
fi
found=$(printf '%s\n' "$report" | grep '^server/' || true)
if [ -n "$found" ]; then
  echo "unused code (remove it, or name a framework's use in [tool.vulture] of pyproject.toml):"
  echo "$found"
  exit 1
fi
echo "no unused code in server/"
