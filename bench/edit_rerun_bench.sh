#!/bin/bash
# One-file edit rerun, interleaved rounds: the in-place rerun (--run-id of the run), the
# --base latest rerun and the plain rerun (a new run, no --base: a nightly `pipeline run
# config.yaml`) after appending a paragraph to one file, for two source trees (e.g. a worktree of
# an older commit and this one), each step one `indexfoundry pipeline run` process.
#   bench/edit_rerun_bench.sh BASE_SRC NEW_SRC RUNS_DIR CONFIG FILE [ROUNDS]
# RUNS_DIR holds one completed run of CONFIG (its sources must be writable copies, never the
# shared corpora); FILE is one of its source files. Each step runs on a fresh copy of RUNS_DIR and
# puts FILE back afterwards; the runs folder's work cache (.cache) is one copy shared by every
# step, so what one tree computes once (its OpenAPI document, keyed by its code) is not computed
# again, and each step appends a paragraph naming its round, tree and mode, so neither tree finds
# the other's chunks of the edit in that cache. Prints: round, variant, mode, wall seconds,
# 1-minute load average, and the manifest's milliseconds per phase.
set -eu
base_src=$1 new_src=$2 runs=$3 config=$4 file=$5 rounds=${6:-3}
py=${PYTHON:-.venv/bin/python}
run_id=$(ls "$runs" | grep -v '^\.' | head -1)
work=$(mktemp -d)
cp "$file" "$work/original"
cp -a "$runs/.cache" "$work/cache" 2>/dev/null || mkdir -p "$work/cache"
trap 'cp "$work/original" "$file"; rm -rf "$work"' EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
for round in $(seq 1 "$rounds"); do
  for mode in in_place base plain; do
    for variant in base new; do
      if [ "$variant" = base ]; then src=$base_src; else src=$new_src; fi
      rm -rf "$work/runs"; cp -a "$runs" "$work/runs"; rm -rf "$work/runs/.cache"; ln -s "$work/cache" "$work/runs/.cache"
      cp "$work/original" "$file"
      printf '\n\nA new closing paragraph, round %s of the %s tree in %s.\n' "$round" "$variant" "$mode" >> "$file"
      args=(pipeline run "$config" --runs-dir "$work/runs" --json)
      if [ "$mode" = in_place ]; then args+=(--run-id "$run_id"); elif [ "$mode" = base ]; then args+=(--base latest --allow-shrink); fi
      s=$(date +%s.%N)
      PYTHONPATH=$src "$py" -m indexfoundry "${args[@]}" > "$work/out.json" 2>/dev/null || true
      e=$(date +%s.%N)
      phases=$("$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join(f\"{k}={v['duration_ms']}\" for k, v in d['phases'].items()))" "$work/out.json")
      echo "round=$round variant=$variant $mode $(echo "$e - $s" | bc) s load $(cut -d' ' -f1 /proc/loadavg) $phases"
    done
  done
done
