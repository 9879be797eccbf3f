#!/bin/sh
#
# cargo-build.sh - release-build the Rust server crate in the current folder into ../target (the target
#                  dir ../.cargo/config.toml names, with frame pointers), seeded from this machine's cache.
#
# USAGE: ../cargo-build.sh CRATE      (from a server's build.sh, after cd into its folder)
#
# Idempotent: a no-op in about a second when nothing changed.
#
# The servers' dependencies (tonic, hyper, tokio, prost...) are most of a first build's minute. A checkout
# whose ../target does not exist yet starts from a copy of the dependencies another checkout on this
# machine compiled, as Go reuses its build cache and cargo its registry: the cache is
# ${RPCPROF_CARGO_CACHE:-$HOME/.cache/rpcprof/cargo}/KEY, KEY a hash of the three Cargo.lock files, the
# compiler's version, .cargo/config.toml and this script, so that any change that could change a
# dependency's build starts a cache of its own. It holds no build of the servers' own crates
# (calibration, rust_pajamax, rust_tonic): those are always compiled from this checkout's sources
# (cargo would take a same-named crate of another checkout, compiled from other sources, as fresh).
# After a build, a cache that has not yet seen CRATE's dependencies is saved from ../target.
# Without HOME (nor RPCPROF_CARGO_CACHE) nothing is cached.
set -eu
crate="$1"
target=../target
own="calibration rust_pajamax rust_tonic"
root="${RPCPROF_CARGO_CACHE:-${HOME:+$HOME/.cache/rpcprof/cargo}}"
if [ -n "$root" ]; then
  key=$( { cat ../calibration/Cargo.lock ../rust_pajamax/Cargo.lock ../rust_tonic/Cargo.lock \
           ../.cargo/config.toml "$0"; rustc -vV; } | sha256sum | cut -c1-16)
  cache="$root/$key"
  if [ ! -d "$target/release" ] && [ -d "$cache/release" ]; then
    mkdir -p "$target" "$root"
    ( flock -s 9; cp -a "$cache/release" "$target/release" ) 9>"$root/.lock"
  fi
fi
cargo build --release --locked
if [ -n "$root" ] && [ ! -e "$cache/.has-$crate" ]; then
  # save the dependencies, not the servers' own crates, marked with the crates whose dependencies they
  # hold: those built in ../target (their binaries are there)
  mkdir -p "$root"
  tmp=$(mktemp -d "$root/.saving-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  cp -a "$target/release" "$tmp/release"
  for c in $own; do
    rm -rf "$tmp/release/$c" "$tmp/release/$c.d" "$tmp/release/deps/$c-"* "$tmp/release/.fingerprint/$c-"* \
      "$tmp/release/build/$c-"* "$tmp/release/incremental/$c-"*
  done
  for c in $own; do
    if [ -e "$target/release/$c" ]; then touch "$tmp/.has-$c"; fi
  done
  (
    flock 9
    old=$(mktemp -d "$root/.old-XXXXXX")
    if [ -d "$cache" ]; then mv "$cache" "$old/"; fi
    mv "$tmp" "$cache"
    rm -rf "$old"
  ) 9>"$root/.lock"
fi
