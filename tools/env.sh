# shellcheck shell=bash
# env.sh - sourced by rpcprof's scripts: where the project's tools live.
# Puts cargo's and Go's install directories and the project virtualenv on PATH.
RPCPROF_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RPCPROF_VENV="${RPCPROF_VENV:-$RPCPROF_ROOT/.venv}"
GOBIN_DIR="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
export RPCPROF_ROOT RPCPROF_VENV
export PATH="$RPCPROF_VENV/bin:$HOME/.cargo/bin:$GOBIN_DIR:/usr/local/go/bin:$PATH"
