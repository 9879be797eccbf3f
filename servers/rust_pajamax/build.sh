#!/bin/sh
# Idempotent release build (a no-op in ~1 s when up to date). Run from anywhere.
# Needs cargo and protoc (Debian protobuf-compiler) for the codegen in build.rs.
# The binary lands in ../target/release/rust_pajamax; ../cargo-build.sh says where the dependencies are kept.
set -eu
cd "$(dirname "$0")"
exec ../cargo-build.sh rust_pajamax
