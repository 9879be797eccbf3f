#!/bin/sh
# The server is the crate in ../rust_tonic, started with another --runtime (see server.yaml):
# build it there (idempotent, ~1 s when up to date).
exec "$(dirname "$0")/../rust_tonic/build.sh"
