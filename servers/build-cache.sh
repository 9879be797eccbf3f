# shellcheck shell=sh
#
# build-cache.sh - sourced by the servers' build scripts: what a build makes is kept once per machine under a
#                  key of everything that goes into it, so that a checkout of the same sources copies it
#                  instead of building it again (as ccache keeps the C++ objects and Go its build cache).
#
# files_key PATH...            a hash of every file below the PATHs (their contents and names, as given)
# cached_build FILE KEY CMD... FILE is up to date when FILE.key holds KEY (a name and the hash of its inputs):
#                              nothing to do. Else the copy kept as KEPT/KEY is copied to FILE; else CMD...
#                              builds FILE, which is kept as KEPT/KEY. KEPT is ${RPCPROF_BUILD_CACHE:-
#                              $HOME/.cache/rpcprof/builds}; without HOME (nor RPCPROF_BUILD_CACHE) nothing is.
#
# The copies' debug information names the folder of the checkout that built them; perf reads their symbols
# and unwinding tables, not that path.

files_key() {
  find "$@" -type f -print | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
}

cached_build() {
  file=$1 key=$2
  shift 2
  if [ -f "$file" ] && [ "$(cat "$file.key" 2>/dev/null)" = "$key" ]; then
    return 0
  fi
  kept="${RPCPROF_BUILD_CACHE:-${HOME:+$HOME/.cache/rpcprof/builds}}"
  if [ -n "$kept" ] && [ -f "$kept/$key" ]; then
    mkdir -p "$(dirname "$file")"
    cp "$kept/$key" "$file"
  else
    "$@"
    if [ -n "$kept" ]; then
      mkdir -p "$kept"
      saving=$(mktemp "$kept/.saving-XXXXXX")
      cp "$file" "$saving" && chmod 755 "$saving" && mv "$saving" "$kept/$key"     # one rename: whole or absent
    fi
  fi
  echo "$key" > "$file.key"
}
