#!/usr/bin/env bash
#
# capture.sh - record the real profiles the golden tests read: one short profile per server.
#
# Runs the servers through profile.sh (each with its own profiler and call-graph mode), copies each
# profile.folded here as SERVER.folded.gz with its app pattern in captures.yaml, then blesses the expected
# tables. Rerun after adding a server; review `git diff tests/data` before committing.
#
# USAGE: tests/data/capture.sh [SERVER...]
#
# eg,
#   tests/data/capture.sh                  # all of them
#   tests/data/capture.sh go_grpc          # one
#
# REQUIREMENTS: what tools/setup.sh installs; root.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
servers=("$@")
((${#servers[@]})) || servers=(rust_tonic_st rust_tonic_mt rust_pajamax go_grpc python_grpcio node_grpcjs java_grpc cpp_grpc)

runs=$(mktemp -d)          # a runs folder of its own: the one run in it is this capture
trap 'rm -rf "$runs"' EXIT
"$root/profile.sh" run "${servers[@]}" -d 2 -w 1 --profile-duration 3 --min-samples 2000 \
  --label golden-capture --port 50451 --format json --runs-dir "$runs" > /dev/null
run=$(find "$runs" -mindepth 1 -maxdepth 1 -type d)
for s in "${servers[@]}"; do
  gzip -9n < "$run/$s/profile.folded" > "$here/$s.folded.gz"
done
RPCPROF_BLESS=1 "$root/tests/run.sh" -q -k golden
echo "capture.sh: captured ${servers[*]} from a run of $(basename "$run")"
