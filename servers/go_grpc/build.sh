#!/usr/bin/env bash
# Idempotent: `go build` only relinks when sources or go.sum changed. Generated *.pb.go are committed
# (regenerate with ./gen.sh). Never stripped: perf needs the symbol table.
set -euo pipefail
cd "$(dirname "$0")"
go build -o bin/go_grpc .
