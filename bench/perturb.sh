#!/usr/bin/env bash
#
# perturb.sh - attribution by perturbation: does rpcprof put a known extra cost where it belongs?
#
# Runs tests/live/test_perturbation.py's sweep of the calibration server (burn_us=0) with longer windows
# and prints, per setting, CPU µs per request by category (level 1, and the level-2 groups the sweep
# moves), syscalls and write syscalls per request; then the noise (max - min over the base runs) and
# the least-squares fits (slope, intercept, R²):
#   - extra_writes N (N 32-byte UDP sends per response): send µs/req and write syscalls/req vs N
#     (expect a slope of a few µs per write, and 1.0 syscall per write);
#   - pad_items N (N packed 10-byte varints in the reply, 10·N bytes + key and length): protocol/protobuf
#     µs/req vs payload bytes (expect a few ns per byte), and send µs/req vs payload bytes (the kernel's
#     copy of the larger reply: positive, smaller).
# The base setting (both 0) runs --repeats times, spread over the sweep (first, middle, last).
# With pad_items > 0 requests are counted as h2load's DATA bytes / the padded reply's framed length
# (rpcprof's own count assumes the unpadded 19-byte reply: see servers/calibration/src/main.rs).
#
# USAGE: bench/perturb.sh [-d SECS] [-w SECS] [--profile-duration SECS] [--syscall-duration SECS]
#                         [--writes 2,4,8] [--pad-items 1000,2000,3000] [--repeats 3] [--port PORT]
#                         [--runs-dir DIR]
#
#   -d, -w              measured window and warm-up of each run (default 10 s, 2 s)
#   --profile-duration  profile window (default 8 s); --syscall-duration: syscall window (default 4 s)
#   --writes            extra_writes settings; --pad-items: pad_items settings (the base 0 is added)
#   --repeats           base runs (default 3, at least 2: their spread is the noise)
#   --port              first port to try (default 50571; the first free one from there is used)
#   --runs-dir          keep the run folders there (default: a temporary folder, deleted at the end)
#
# eg,
#   bench/perturb.sh                                  # 9 runs, about 6 minutes
#   bench/perturb.sh -d 20 --writes 1,2,4,8,16        # longer windows, more write settings
#   bench/perturb.sh --pad-items 500,1000,2000,4000 --runs-dir /tmp/perturb   # keep the runs
#
# Takes about (settings + repeats) x (warm-up + window + syscall + profile windows + ~6 s).
# The test (tests/live/test_perturbation.py) asserts on the same figures with 3-4 s windows.
#
# REQUIREMENTS: what ./profile.sh needs (Linux, root, 2+ CPUs; tools/setup.sh installs the rest).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

case "${1:-}" in
  -h|--help) sed -n '2,/^# REQUIREMENTS/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

# The virtualenv the sweep runs in (tools/env.sh's default); each run's profile.sh sets up the rest.
"$here/tools/setup.sh" >&2
cd "$here"
# tests/ on the path: the test imports conftest.py's helpers
PYTHONPATH="$here/tests${PYTHONPATH:+:$PYTHONPATH}" exec "${RPCPROF_VENV:-$here/.venv}/bin/python" tests/live/test_perturbation.py "$@"
