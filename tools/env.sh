# shellcheck shell=bash
# env.sh - sourced by rpcprof's scripts: where the project's tools live.
# Puts cargo's and Go's install directories and the project virtualenv on PATH.
RPCPROF_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RPCPROF_VENV="${RPCPROF_VENV:-$RPCPROF_ROOT/.venv}"
GOBIN_DIR="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
export RPCPROF_ROOT RPCPROF_VENV
export PATH="$RPCPROF_VENV/bin:$HOME/.cargo/bin:$GOBIN_DIR:/usr/local/go/bin:$PATH"

# rpcprof_check_venv PROG: exit 2 with one line when the virtualenv's rpcprof is another checkout's code
# (an editable install made by that checkout's tools/setup.sh): this checkout's scripts would run the
# other's code, and write into its flamegraphs/. No virtualenv yet, or none importing rpcprof: setup
# makes one here.
rpcprof_check_venv() {
  local prog=$1 pkg want
  [[ -x $RPCPROF_VENV/bin/python ]] || return 0
  pkg=$("$RPCPROF_VENV/bin/python" -I -c 'import os, rpcprof; print(os.path.dirname(os.path.realpath(rpcprof.__file__)))' 2>/dev/null) || return 0
  want=$(realpath "$RPCPROF_ROOT/tools/rpcprof")
  [[ $pkg == "$want" ]] && return 0
  local other=${pkg%/tools/rpcprof} fix
  if [[ $(realpath -m "$RPCPROF_VENV") == $(realpath -m "$RPCPROF_ROOT/.venv") ]]; then
    fix="remove $RPCPROF_VENV and run tools/setup.sh here"
  else
    fix="unset RPCPROF_VENV (or point it at a virtualenv of this checkout) and run tools/setup.sh here"
  fi
  echo "$prog: error: the virtualenv $RPCPROF_VENV runs the code of $other, not of this checkout ($RPCPROF_ROOT): $fix" >&2
  exit 2
}
