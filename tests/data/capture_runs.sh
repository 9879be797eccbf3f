#!/usr/bin/env bash
#
# capture_runs.sh - record the small saved run folders the document generators' tests read.
#
# Makes two real, short measurements and keeps what the reports read from them (manifest.json,
# metrics.json, each server's result.json and profile.folded, gzip'd), not perf.data or logs:
#   runs/seed-001  a run of seed 001's setup (ghz, C=1, S=50) for report.py seeds
#   runs/sweep     a two-cell sweep (complex_proto, C=1, S=1 and 100) for report.py results
#   runs/offcpu    pajamax at exactly 50 streams in flight (LATENCY-BOUND: its automatic off-CPU window,
#                  with offcpu.folded, offcpu.folded.count and sockets.log) for report.py waits
#   runs/rounds    the README's first command as it is (5 rounds of rust_tonic_mt and rust_pajamax, a
#                  profile per round) for significance across rounds (report.py compare, diff)
#   runs/attach    profile.sh attach --load to python_grpcio pinned to CPU 0: py-spy's profile, then perf's
#                  of the same process (report.py run and compare on two views of one process)
# Rerun after changing what a run folder holds; review `git diff tests/data/runs` before committing.
#
# USAGE: tests/data/capture_runs.sh [seed-001] [sweep] [offcpu] [rounds] [attach]     (default: all five)
#
# REQUIREMENTS: what tools/setup.sh installs; root.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

wanted=("${@:-seed-001 sweep offcpu rounds attach}")
wants() { [[ " ${wanted[*]} " == *" $1 "* ]]; }

servers=(rust_tonic_mt rust_pajamax rust_tonic_st)
wants seed-001 && "$root/profile.sh" run "${servers[@]}" --driver ghz -C 1 -S 50 -d 2 -w 1 --syscall-duration 2 \
  --profile-duration 3 --min-samples 3000 --label capture-seed-001 --port 50461 --format json \
  --runs-dir "$scratch" > /dev/null
wants sweep && "$root/profile.sh" sweep "${servers[@]}" --scenario complex_proto -C 1 -S 1,100 -d 2 -w 1 \
  --syscall-duration 2 --profile-duration 3 --min-samples 3000 --label capture-sweep --port 50461 \
  --format json --runs-dir "$scratch" > /dev/null
wants offcpu && "$root/profile.sh" run rust_pajamax -S 50 -d 2 -w 1 --no-profile --no-syscalls \
  --off-cpu-duration 3 --label capture-offcpu --port 50461 --format json --runs-dir "$scratch" > /dev/null
wants rounds && "$root/profile.sh" run rust_tonic_mt rust_pajamax --label capture-rounds --port 50461 --format json \
  --runs-dir "$scratch" > /dev/null
if wants attach; then
  (cd "$root/servers/python_grpcio" && exec taskset -c 0 "$root/.venv/bin/python" server.py --port 50462) \
    > "$scratch/server.log" 2>&1 &
  server=$!
  trap 'kill "$server" 2>/dev/null; rm -rf "$scratch"' EXIT
  for _ in $(seq 50); do grep -q listening "$scratch/server.log" && break; sleep 0.2; done
  "$root/profile.sh" attach --pid "$server" --load --target 127.0.0.1:50462 -d 3 -w 1 --name python \
    --format json --runs-dir "$scratch" > /dev/null
  kill "$server"
  mv "$(find "$scratch" -maxdepth 1 -name '*-attach-python')" "$scratch/attach-capture-attach"
fi

# keep: the JSON files and the folded stacks (gzip'd), anywhere below the run folder
keep() {
  local from=$1 to=$2
  rm -rf "$to"
  (cd "$from" && find . -name '*.json' -o -name profile.folded -o -name 'offcpu.folded*' -o -name sockets.log) |
  while read -r f; do
    mkdir -p "$to/$(dirname "$f")"
    if [[ $f == *.json ]]; then cp "$from/$f" "$to/$f"; else gzip -9n < "$from/$f" > "$to/$f.gz"; fi
  done
}
for name in seed-001 sweep offcpu rounds attach; do
  if wants "$name"; then keep "$(find "$scratch" -maxdepth 1 -name "*-capture-$name")" "$here/runs/$name"; fi
done
du -sh "$here/runs"/*
