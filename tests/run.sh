#!/usr/bin/env bash
#
# run.sh - run rpcprof's tests on this machine, installing what is missing first.
#
# USAGE: tests/run.sh [pytest arguments]
#
# eg,
#   tests/run.sh                 # everything: unit, golden and integration tests (real servers, real perf)
#   tests/run.sh -k stats        # a subset
#
# Integration tests build and start real servers pinned to CPU 0 and drive them from CPU 1 for a few
# seconds each; they assert invariants, never timings.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tools/env.sh
source "$here/tools/env.sh"
rpcprof_check_venv tests/run.sh
"$here/tools/setup.sh"
cd "$here"
exec "$RPCPROF_VENV/bin/python" -m pytest tests "$@"
