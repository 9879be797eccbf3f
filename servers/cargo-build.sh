#!/bin/sh
#
# cargo-build.sh - release-build the Rust server crate in the current folder into ../target (the target
#                  dir ../.cargo/config.toml names, with frame pointers), seeded from this machine's cache.
#
# USAGE: ../cargo-build.sh CRATE      (from a server's build.sh, after cd into its folder)
#
# Idempotent: a no-op when the binary was built from the sources as they are.
#
# The servers' dependencies (tonic, hyper, tokio, prost...) are most of a first build's minute. A checkout
# whose ../target holds no dependencies yet starts from a copy of those another checkout on this
# machine compiled, as Go reuses its build cache and cargo its registry: the cache is
# ${RPCPROF_CARGO_CACHE:-$HOME/.cache/rpcprof/cargo}/KEY, KEY a hash of the three Cargo.lock files, the
# compiler's version, .cargo/config.toml and this script, so that any change that could change a
# dependency's build starts a cache of its own. That copy holds no build of the servers' own crates
# (calibration, rust_pajamax, rust_tonic): cargo would take a same-named crate of another checkout,
# compiled from other sources, as fresh. After a build, a cache that has not yet seen CRATE's dependencies
# is saved from ../target.
# The own crate's binary is kept instead (../build-cache.sh), under KEY and a hash of every file of the
# crate's folder and of ../proto (its sources, build.rs, Cargo.toml): a checkout whose binary is missing
# takes the one built from the same sources, and a binary built from the sources as they are is not built
# again.
# Without HOME (nor RPCPROF_CARGO_CACHE) nothing is cached.
set -eu
crate="$1"
target=../target
own="calibration rust_pajamax rust_tonic"
root="${RPCPROF_CARGO_CACHE:-${HOME:+$HOME/.cache/rpcprof/cargo}}"
key=$( { cat ../calibration/Cargo.lock ../rust_pajamax/Cargo.lock ../rust_tonic/Cargo.lock \
         ../.cargo/config.toml "$0"; rustc -vV; } | sha256sum | cut -c1-16)
# shellcheck source=servers/build-cache.sh
. ../build-cache.sh
cache="${root:+$root/$key}"

build() {
  if [ -n "$root" ] && [ ! -d "$target/release/deps" ] && [ -d "$cache/release" ]; then
    mkdir -p "$target/release" "$root"
    ( flock -s 9; cp -a "$cache/release/." "$target/release/" ) 9>"$root/.lock"
  fi
  cargo build --release --locked
  built=1
}

built=
cached_build "$target/release/$crate" "$crate-$( { echo "$key"; files_key . ../proto; } | sha256sum | cut -c1-16)" build
if [ -n "$built" ] && [ -n "$root" ] && [ ! -e "$cache/.has-$crate" ]; then
  # save the dependencies, not the servers' own crates, marked with the crates whose dependencies they
  # hold: those built in ../target (their binaries are there)
  mkdir -p "$root"
  tmp=$(mktemp -d "$root/.saving-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  cp -a "$target/release" "$tmp/release"
  for c in $own; do
    rm -rf "$tmp/release/$c" "$tmp/release/$c.key" "$tmp/release/$c.d" "$tmp/release/deps/$c-"* \
      "$tmp/release/.fingerprint/$c-"* "$tmp/release/build/$c-"* "$tmp/release/incremental/$c-"*
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
