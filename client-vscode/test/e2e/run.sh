#!/usr/bin/env bash
# One command for the VS Code end-to-end test: install what it needs (once), run the extension's
# unit tests, build and package it, then drive it in code-server: against `cardrunner lsp`, then
# against the stand-in server client-vscode/test/fake_lsp_server.py. Extra arguments go to run.mjs
# (`--server real|fake` for one of them, `--until activation`, `--keep`). Environment:
#   CARDRUNNER_E2E_PYTHON     interpreter with cardrunner installed (default: <repo>/.venv/bin/python)
#   CARDRUNNER_E2E_ARTIFACTS  screenshots and logs (default: <repo>/test-artifacts/vscode)
#   CARDRUNNER_E2E_IMAGES     also save the README's pictures of the run view and the review there
#                             (the real-server run; e.g. docs/images, relative to the repository)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT="$(cd "$HERE/../.." && pwd)"
REPO="$(cd "$CLIENT/.." && pwd)"

eval "$(bash "$REPO/scripts/install-vscode-e2e.sh" --print-env)"

cd "$CLIENT"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund
fi
echo "== client-vscode formatting and unit tests"
npm run --silent format:check
npm test --silent
echo "== package the VSIX"
npm run --silent package >/dev/null
echo "== end-to-end in code-server"

PYTHON="${CARDRUNNER_E2E_PYTHON:-$REPO/.venv/bin/python}"
ARTIFACTS="${CARDRUNNER_E2E_ARTIFACTS:-$REPO/test-artifacts/vscode}"
# A relative CARDRUNNER_E2E_IMAGES (docs/images) is the repository's folder, not client-vscode's.
IMAGES="${CARDRUNNER_E2E_IMAGES:-}"
if [ -n "$IMAGES" ] && [ "${IMAGES#/}" = "$IMAGES" ]; then IMAGES="$REPO/$IMAGES"; fi
e2e() {
  "$CARDRUNNER_E2E_NODE" "$HERE/run.mjs" \
    --vsix "$CLIENT/dist/cardrunner.vsix" \
    --python "$PYTHON" \
    --node "$CARDRUNNER_E2E_NODE" \
    --code-server "$CARDRUNNER_E2E_CODE_SERVER" \
    --playwright "$CARDRUNNER_E2E_PLAYWRIGHT" \
    --chromium "$CARDRUNNER_E2E_CHROMIUM" \
    "$@"
}

# The first hour (firsthour.mjs): a fresh profile, no settings written by the test; --scenario
# demo (the README's two commands, the demo folder, one click, run, review, Done), clone (the
# README's editor path on a clone of this repository), workspace (a workspace's settings alone
# start nothing; the no leaves an error with a way out).
first_hour() {
  "$CARDRUNNER_E2E_NODE" "$HERE/firsthour.mjs" \
    --vsix "$CLIENT/dist/cardrunner.vsix" \
    --python "$PYTHON" \
    --node "$CARDRUNNER_E2E_NODE" \
    --code-server "$CARDRUNNER_E2E_CODE_SERVER" \
    --playwright "$CARDRUNNER_E2E_PLAYWRIGHT" \
    --chromium "$CARDRUNNER_E2E_CHROMIUM" \
    "$@"
}

# Without --server: the real server (the setting as one string), the stand-in (the client's exact
# messages, dropping a file), then the three first-hour scenarios. With --server
# real|fake|missing|path: only that one (missing: a configured command that does not exist;
# path: no setting, cardrunner on PATH). With --first-hour demo|clone|workspace: only that one.
case " $* " in
  *" --server "*) e2e --artifacts "$ARTIFACTS" "$@" ;;
  *" --first-hour "*)
    all=" $* "
    scenario="${all##* --first-hour }"
    scenario="${scenario%% *}"
    first_hour --scenario "$scenario" --artifacts "$ARTIFACTS/first-hour-$scenario" ${IMAGES:+--images "$IMAGES"}
    ;;
  *)
    passed=0 failed=0
    if e2e --artifacts "$ARTIFACTS" --server real ${IMAGES:+--images "$IMAGES"} "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    if e2e --artifacts "$ARTIFACTS/fake-server" --server fake "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    for scenario in demo clone workspace; do
      if first_hour --scenario "$scenario" --artifacts "$ARTIFACTS/first-hour-$scenario" ${IMAGES:+--images "$IMAGES"}; then
        passed=$((passed + 1))
      else
        failed=$((failed + 1))
      fi
    done
    echo "vscode-e2e: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    ;;
esac
