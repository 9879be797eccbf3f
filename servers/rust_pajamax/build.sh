#!/bin/sh
# Idempotent release build; cargo makes it a quick no-op when nothing changed.
# Binary: ../target/release/rust_pajamax (shared target dir from servers/.cargo/config.toml, which also
# sets -C force-frame-pointers=yes). Needs protoc (PATH or $PROTOC) for prost-build.
set -eu
cd "$(dirname "$0")"
exec cargo build --release --locked
