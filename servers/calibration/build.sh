#!/bin/sh
# Idempotent release build (a no-op in ~1 s when up to date). Run from anywhere.
# Needs cargo and protoc (Debian protobuf-compiler) for the codegen in build.rs.
# Frame pointers and the shared target dir come from ../.cargo/config.toml;
# the binary lands in ../target/release/calibration.
set -eu
cd "$(dirname "$0")"
exec cargo build --release --locked
