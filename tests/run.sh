#!/usr/bin/env bash
#
# run.sh - run rpcprof's tests on this machine, installing what is missing first.
#
# USAGE: tests/run.sh [pytest arguments]
#
# eg,
#   tests/run.sh                 # everything: unit, golden, fuzz and live tests (real servers, real perf)
#   tests/run.sh -m fast         # the fast tier: tests/unit and tests/golden, no server, no profiler
#   tests/run.sh -k stats        # a subset
#
# Live tests (tests/live) build and start real servers pinned to CPU 0 and drive them from CPU 1 for a
# few seconds each; they assert invariants, never timings (docs/testing.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tools/env.sh
source "$here/tools/env.sh"
rpcprof_check_venv tests/run.sh
"$here/tools/setup.sh" --for-tests
cd "$here"
exec "$RPCPROF_VENV/bin/python" -m pytest tests "$@"
