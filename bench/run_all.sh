#!/usr/bin/env bash
# Run every benchmark, one after the other (they must not compete for the 2 cores), and keep
# the output in bench/last-run.txt. Usage, from the repository root: bench/run_all.sh
set -u -o pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export PYTHONUNBUFFERED=1
status=0
{
  echo "# bench/run_all.sh — $(date -u '+%Y-%m-%d %H:%M UTC') — commit $(git rev-parse --short HEAD)"
  echo "# nproc $(nproc); $(free -h | awk '/^Mem:/ {print "mem " $2}'); $($PY --version)"
  for name in token_cost compaction_tokens loop_overhead startup idle_memory idle_wakeups idle_pair editor_latency spawn_pause client_cpu editor_gone run_start board_size plan_board card_parse sandbox_overhead big_repo browser_tokens; do
    echo
    echo "\$ $PY bench/$name.py"
    start=$(date +%s)
    $PY "bench/$name.py" || status=1
    echo "(took $(( $(date +%s) - start )) s)"
  done
  exit $status
} 2>&1 | tee bench/last-run.txt
