#!/usr/bin/env bash
#
# capture_runs.sh - record the small saved run folders the document generators' tests read.
#
# Makes two real, short measurements and keeps what the reports read from them (manifest.json,
# metrics.json, each server's result.json and profile.folded, gzip'd), not perf.data or logs:
#   runs/seed-001  a run of seed 001's setup (ghz, C=1, S=50) for report.py seeds
#   runs/sweep     a two-cell sweep (complex_proto, C=1, S=1 and 100) for report.py results
# Rerun after changing what a run folder holds; review `git diff tests/data/runs` before committing.
#
# USAGE: tests/data/capture_runs.sh
#
# REQUIREMENTS: what tools/setup.sh installs; root.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

servers=(rust_tonic_mt rust_pajamax rust_tonic_st)
"$root/profile.sh" run "${servers[@]}" --driver ghz -C 1 -S 50 -d 2 -w 1 --syscall-duration 2 \
  --profile-duration 3 --min-samples 3000 --label capture-seed-001 --port 50461 --format json \
  --runs-dir "$scratch" > /dev/null
"$root/profile.sh" sweep "${servers[@]}" --scenario complex_proto -C 1 -S 1,100 -d 2 -w 1 \
  --syscall-duration 2 --profile-duration 3 --min-samples 3000 --label capture-sweep --port 50461 \
  --format json --runs-dir "$scratch" > /dev/null

# keep: the JSON files and the folded stacks (gzip'd), anywhere below the run folder
keep() {
  local from=$1 to=$2
  rm -rf "$to"
  (cd "$from" && find . -name '*.json' -o -name profile.folded) | while read -r f; do
    mkdir -p "$to/$(dirname "$f")"
    if [[ $f == *.folded ]]; then gzip -9n < "$from/$f" > "$to/$f.gz"; else cp "$from/$f" "$to/$f"; fi
  done
}
keep "$(find "$scratch" -maxdepth 1 -name '*-capture-seed-001')" "$here/runs/seed-001"
keep "$(find "$scratch" -maxdepth 1 -name '*-capture-sweep')" "$here/runs/sweep"
du -sh "$here/runs"/*
