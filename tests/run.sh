#!/usr/bin/env bash
#
# run.sh - run rpcprof's tests on this machine, installing what is missing first (for -m fast, only what
# the fast tier needs: tools/setup.sh without --for-tests).
#
# USAGE: tests/run.sh [pytest arguments]
#
# eg,
#   tests/run.sh                 # everything: unit, golden, fuzz and live tests (real servers, real perf)
#   tests/run.sh -m fast         # the fast tier: tests/unit and tests/golden, no server, no profiler
#   tests/run.sh -k stats        # a subset
#   tests/run.sh tests/unit/test_stats.py   # a file (or folder, or FILE::TEST)
#
# Live tests (tests/live) build and start real servers pinned to CPU 0 and drive them from CPU 1 for a
# few seconds each; they assert invariants, never timings (docs/testing.md).
#
# The tests that start no server run on both CPUs (pytest-xdist, -n 2): the fast tier when `-m fast` is
# given, and with no -m, the unit, golden and fuzz tests first, then the live tests one at a time in a
# session of their own (two live tests at once would share the server's CPU). Give -n yourself, or -m
# anything else, and the arguments go to one pytest session as they are.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tools/env.sh
source "$here/tools/env.sh"
rpcprof_check_venv tests/run.sh
# the fast tier needs what a run needs (perf, inferno, the virtualenv); the other tiers also ghz, the Java
# and C++ toolchains, ShellCheck and Chromium (its tests of report.html are in the full suite)
args=" $* "
if [[ $args == *" -m fast "* ]]; then
  "$here/tools/setup.sh"
else
  "$here/tools/setup.sh" --for-tests
fi
cd "$here"
# Python writes bytecode, whatever the environment says (PYTHONDONTWRITEBYTECODE): pytest keeps the test modules
# it rewrote, so each later session and xdist worker collects without rewriting them again
unset PYTHONDONTWRITEBYTECODE
# the whole tests/ folder, unless files or folders are named (tests/run.sh tests/live/test_attach_live.py)
where=(tests)
for arg in "$@"; do [[ $arg != -* && -e ${arg%%::*} ]] && where=(); done
pytest=("$RPCPROF_VENV/bin/python" -m pytest "${where[@]}")
parallel=(-n 2 --dist worksteal)

if [[ $args == *" -n "* || $args == *" -n="* || $args =~ \ -n[0-9] ]]; then
  exec "${pytest[@]}" "$@"
elif [[ $args == *" -m fast "* ]]; then
  exec "${pytest[@]}" "${parallel[@]}" "$@"
elif [[ $args == *" -m "* ]]; then
  exec "${pytest[@]}" "$@"
fi

# everything: two sessions; exit 5 (no test selected, e.g. -k matched only one side) counts as passed
# when the other session ran tests
set +e
"${pytest[@]}" -m "not live" "${parallel[@]}" "$@"; offline=$?
# the live session collects tests/live alone when no file was named (the tiers are folders: 1 s, not 5)
live_where=("${where[@]/#tests/tests/live}")
"$RPCPROF_VENV/bin/python" -m pytest "${live_where[@]}" -m live "$@"; live=$?
set -e
if (( offline == 5 && live == 5 )); then exit 5; fi
for rc in "$offline" "$live"; do
  if (( rc != 0 && rc != 5 )); then exit "$rc"; fi
done
exit 0
