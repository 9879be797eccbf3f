#!/usr/bin/env bash
# Idempotent: make rebuilds only what is older than main.cc, ../proto/*.proto or the Makefile's rules;
# a no-op when bin/cpp_grpc is up to date. gen/ (protoc's output) and bin/ are not tracked.
# Needs g++, pkg-config, Debian libgrpc++-dev and protobuf-compiler-grpc (tools/setup.sh --cpp).
set -euo pipefail
cd "$(dirname "$0")"
make -s -q bin/cpp_grpc 2>/dev/null && exit 0     # up to date
for cmd in g++ make pkg-config protoc grpc_cpp_plugin; do
  command -v "$cmd" >/dev/null || { echo "cpp_grpc: $cmd not found: run tools/setup.sh --cpp" >&2; exit 1; }
done
pkg-config --exists grpc++ || { echo "cpp_grpc: gRPC C++ not found (pkg-config grpc++): run tools/setup.sh --cpp" >&2; exit 1; }
make -s -j2 bin/cpp_grpc
