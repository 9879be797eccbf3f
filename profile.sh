#!/usr/bin/env bash
#
# profile.sh - measure and explain RPC servers: requests per server CPU-second, and where each
#              request's CPU goes.
#
# Installs what is missing first (tools/setup.sh), then runs the rpcprof command given.
#
# USAGE: ./profile.sh run SERVER... [options]     compare servers end to end (see run --help)
#        ./profile.sh attach --pid PID [options]  profile a running process (see attach --help)
#        ./profile.sh sweep SERVER... -C 1,10 -S 1,10,100   seed 000's table (see sweep --help)
#        ./profile.sh --help                      this text
#        ./profile.sh COMMAND --help              a command's options and their defaults (installs nothing)
#
# eg,
#   ./profile.sh run rust_tonic_mt rust_pajamax               # the README's comparison: the defaults, C=1 S=1000
#   ./profile.sh run rust_tonic_mt go_grpc -C 10 -S 100 -d 10 # 10 connections, 100 streams, 10 s window
#   ./profile.sh run rust_tonic_st --driver ghz --format json # ghz instead of h2load, JSON output
#
# Each run writes flamegraphs/<timestamp>-<label>/ (manifest.json, metrics.json, logs per server).
# The server runs on CPU 0, the load on the other CPUs (--server-cpus, --load-cpus).
#
# REQUIREMENTS: Linux, root (perf, taskset, cgroup CPU accounting), the registries for first setup.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# this text: the comment block above, from its first line of words to the last before the code
usage() { awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; }

case "${1:-}" in
  ""|-h|--help) usage; exit 0 ;;
esac

# shellcheck source=tools/env.sh
source "$here/tools/env.sh"
rpcprof_check_venv profile.sh     # before setup, which would install this checkout into that virtualenv
# a command's --help (-h) installs nothing: click prints it from the virtualenv, as it is
for arg in "$@"; do
  [[ $arg == -- ]] && break
  if [[ $arg == -h || $arg == --help ]]; then
    [[ -x $RPCPROF_VENV/bin/python ]] && exec "$RPCPROF_VENV/bin/python" -m rpcprof.cli.profile "$@"
    usage
    echo "profile.sh: $1's options are listed once tools/setup.sh has made the virtualenv $RPCPROF_VENV" >&2
    exit 0
  fi
done
# ghz, the second load driver, only when the arguments name it (--driver ghz): ~30 s a first run needs not;
# a JDK and Maven only when they name a server written in Java (its server.yaml says `language: java`),
# gRPC C++ only when they name one written in C++ (`language: cpp`)
setup_args=()
for arg in "$@"; do
  [[ $arg == *ghz* ]] && setup_args+=(--ghz)
  if [[ $arg =~ ^[A-Za-z0-9_.-]+$ && -f $here/servers/$arg/server.yaml ]]; then
    grep -qx 'language: java' "$here/servers/$arg/server.yaml" && setup_args+=(--java)
    grep -qx 'language: cpp' "$here/servers/$arg/server.yaml" && setup_args+=(--cpp)
  fi
done
"$here/tools/setup.sh" "${setup_args[@]}" >&2

exec "$RPCPROF_VENV/bin/python" -m rpcprof.cli.profile "$@"
