#!/usr/bin/env bash
#
# svg_to_png.sh - render an SVG (a flame graph, a chart) to PNG in headless Chromium, as a browser shows it.
#
# Chromium runs headless with its network features off, in a throw-away profile directory, and is
# stopped by PID on every exit path. Scripts inside the SVG run (inferno's init sizes the graph to
# the window), so the PNG shows what a reader sees on opening the file.
#
# USAGE: tools/svg_to_png.sh [-w WIDTH] [-h HEIGHT] SVG PNG
#
#   -w WIDTH    window width in px (default 1400)
#   -h HEIGHT   window height in px (default 900); a taller graph is cut at the bottom
#
# eg,
#   tools/svg_to_png.sh flamegraphs/RUN/rust_tonic/flame.svg /tmp/tonic.png
#   tools/svg_to_png.sh -h 1600 flamegraphs/RUN/node_grpcjs/flame.svg /tmp/node.png
#   tools/svg_to_png.sh flamegraphs/RUN/breakdown.svg /tmp/breakdown.png
#
# REQUIREMENTS: Debian chromium (installed with apt-get if missing: needs root), timeout (coreutils).
set -euo pipefail

# --- defaults -----------------------------------------------------------------------------------
width=1400
height=900
time_limit=60          # seconds Chromium may take before it is stopped

# --- options ------------------------------------------------------------------------------------
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
while getopts ":w:h:" opt; do
  case $opt in
    w) width=$OPTARG ;;
    h) height=$OPTARG ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if (($# != 2)); then
  usage >&2
  exit 2
fi
svg=$1
png=$2

# --- option logic -------------------------------------------------------------------------------
[[ $width =~ ^[0-9]+$ && $height =~ ^[0-9]+$ ]] || { echo "svg_to_png.sh: ERROR: -w and -h take pixels." >&2; exit 2; }
[[ -f $svg ]] || { echo "svg_to_png.sh: ERROR: $svg: no such file." >&2; exit 2; }
svg_abs=$(realpath "$svg")
png_abs=$(realpath -m "$png")
[[ -d $(dirname "$png_abs") ]] || { echo "svg_to_png.sh: ERROR: $(dirname "$png"): no such directory." >&2; exit 2; }

# --- permission checks and requirements -----------------------------------------------------------
if ! command -v chromium >/dev/null; then
  [[ $(id -u) == 0 ]] || { echo "svg_to_png.sh: ERROR: chromium missing; install it as root: apt-get install -y chromium" >&2; exit 1; }
  echo "svg_to_png.sh: installing Debian chromium (apt-get)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

# --- cleanup (traps first, so Ctrl-C and errors leave nothing behind) ------------------------------
profile_dir=$(mktemp -d /tmp/svg_to_png.XXXXXX)
chromium_pid=""
cleanup() {
  if [[ -n $chromium_pid ]] && kill -0 "$chromium_pid" 2>/dev/null; then
    kill "$chromium_pid" 2>/dev/null || true
    wait "$chromium_pid" 2>/dev/null || true
  fi
  rm -rf "$profile_dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- work ---------------------------------------------------------------------------------------
rm -f "$png_abs"
log="$profile_dir/chromium.log"
timeout "$time_limit" chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --disable-extensions \
  --hide-scrollbars --user-data-dir="$profile_dir/profile" --window-size="$width,$height" \
  --screenshot="$png_abs" "file://$svg_abs" >"$log" 2>&1 &
chromium_pid=$!
status=0
wait "$chromium_pid" || status=$?
chromium_pid=""

# --- summary ------------------------------------------------------------------------------------
if ((status != 0)) || [[ ! -s $png_abs ]]; then
  echo "svg_to_png.sh: ERROR: chromium wrote no PNG (exit $status$( ((status == 124)) && echo ", stopped after ${time_limit} s")). Its log:" >&2
  tail -n 5 "$log" >&2
  exit 1
fi
echo "svg_to_png.sh: $svg -> $png (${width}x${height})"
