#!/usr/bin/env bash
#
# publish.sh - copy run or sweep folders into docs/data/, trimmed, so that the published documents can
#              be regenerated and audited from a clone.
#
# Keeps what the reports read and what a reader audits: every JSON file, every log (gzip'd) and the
# folded stacks (profile.folded, offcpu.folded*: gzip'd). Leaves out perf.data, py-spy's raw files,
# the off-CPU recordings and the pictures (SVG, HTML), which the folded files regenerate.
# A folder already in docs/data/ is not overwritten: remove it first, on purpose.
#
# USAGE: tools/publish.sh FOLDER [FOLDER ...]
#        tools/publish.sh --check      # every generated document, quoted block and table from a command,
#                                      # regenerated from docs/data
#
# eg,
#   tools/publish.sh flamegraphs/20261124-050000-seed-001
#   ./report.py seeds docs/data/20261124-050000-seed-001 -o docs/seeds.md
#   tools/publish.sh --check          # one line per difference, exit 1 if any (.ci/run calls it)
#
# The documents' first lines name the command that regenerates them (docs/data/README.md lists them);
# tests/golden/test_published.py runs each and checks the output is the committed document, byte for byte.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data="$here/docs/data"
max_bytes=$((10 * 1024 * 1024))        # the whole of docs/data/

[[ $# -ge 1 ]] || { echo "publish.sh: error: name a run or sweep folder, e.g. tools/publish.sh flamegraphs/RUN" >&2; exit 2; }
if [[ $1 == --check ]]; then
  # shellcheck source=tools/env.sh
  source "$here/tools/env.sh"
  [[ -x $RPCPROF_VENV/bin/python ]] || { echo "publish.sh: error: no virtualenv $RPCPROF_VENV: run tools/setup.sh" >&2; exit 2; }
  cd "$here"
  exec "$RPCPROF_VENV/bin/python" -m rpcprof.documents.published "$here"
fi
for from in "$@"; do
  [[ -f $from/manifest.json ]] || {
    echo "publish.sh: error: $from has no manifest.json: give a run or sweep folder (flamegraphs/...)" >&2; exit 2; }
  to="$data/$(basename "$from")"
  [[ ! -e $to ]] || { echo "publish.sh: error: $to exists: remove it first to publish $from again" >&2; exit 2; }
  status=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("status", "?"))' "$from/manifest.json")
  [[ $status == complete ]] || echo "publish.sh: warning: $from is marked $status" >&2
  mkdir -p "$to"
  (cd "$from" && find . -type f \( -name '*.json' -o -name '*.log' -o -name profile.folded -o -name 'offcpu.folded*' \)) |
  while read -r f; do
    mkdir -p "$to/$(dirname "$f")"
    if [[ $f == *.json ]]; then cp "$from/$f" "$to/$f"; else gzip -9n < "$from/$f" > "$to/$f.gz"; fi
  done
  echo "publish.sh: $from -> $to ($(du -sh "$to" | cut -f1))"
done
total=$(du -sb "$data" | cut -f1)
if (( total > max_bytes )); then
  echo "publish.sh: error: docs/data holds $((total / 1024)) KiB, over the 10 MiB the repository allows; remove a run" >&2
  exit 1
fi
