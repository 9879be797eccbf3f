#!/usr/bin/env bash
# Idempotent: a no-op when bin/go_grpc was built from the module's files as they are, with this Go; a checkout
# of the same sources copies the binary another built on this machine (../build-cache.sh), else `go build`
# (which reuses Go's build cache). Generated *.pb.go are committed (regenerate with ./gen.sh). Never
# stripped: perf needs the symbol table. -buildvcs=false: the binary is the sources', not a checkout's commit.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=servers/build-cache.sh
source ../build-cache.sh
build() { go build -buildvcs=false -o bin/go_grpc .; }
inputs() { files_key go.mod go.sum main.go pb; go version; }       # what goes into the binary
cached_build bin/go_grpc "go_grpc-$( { inputs || true; } 2>&1 | sha256sum | cut -c1-16)" build
