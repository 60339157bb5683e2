#!/bin/bash
# Cold CLI start, interleaved rounds: `indexfoundry --help` and one search per mode, for two source
# trees (e.g. a worktree of an older commit and this one), each in a fresh interpreter.
#   bench/cold_cli_bench.sh BASE_SRC NEW_SRC RUNS_DIR [ROUNDS]
# RUNS_DIR holds a completed run (e.g. `indexfoundry pipeline run` of a folder source). Prints one
# line per command: round, variant, command, wall seconds, exit code, 1-minute load average.
set -u
base_src=$1 new_src=$2 runs=$3 rounds=${4:-3}
py=${PYTHON:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
wall() { local s e rc; s=$(date +%s.%N); "$@" >/dev/null 2>&1; rc=$?; e=$(date +%s.%N); echo "$(echo "$e - $s" | bc) rc=$rc"; }
for round in $(seq 1 "$rounds"); do
  for variant in base new; do
    if [ "$variant" = base ]; then src=$base_src; else src=$new_src; fi
    echo "round=$round variant=$variant help $(PYTHONPATH=$src wall "$py" -m indexfoundry --help) load $(cut -d' ' -f1 /proc/loadavg)"
    for mode in hybrid semantic keyword; do
      echo "round=$round variant=$variant search-$mode $(PYTHONPATH=$src wall "$py" -m indexfoundry search 'how do I change the theme' --runs-dir "$runs" --mode "$mode" --json) load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
