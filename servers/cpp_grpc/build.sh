#!/usr/bin/env bash
# Idempotent: make rebuilds only what is older than main.cc, ../proto/*.proto or the Makefile's rules;
# a no-op when bin/cpp_grpc is up to date. gen/ (protoc's output) and bin/ are not tracked.
# Needs g++, pkg-config, Debian libgrpc++-dev and protobuf-compiler-grpc, and uses ccache where present
# (tools/setup.sh --cpp installs them all).
set -euo pipefail
cd "$(dirname "$0")"
make -s -q bin/cpp_grpc 2>/dev/null && exit 0     # up to date
for cmd in g++ make pkg-config protoc grpc_cpp_plugin; do
  command -v "$cmd" >/dev/null || { echo "cpp_grpc: $cmd not found: run tools/setup.sh --cpp" >&2; exit 1; }
done
pkg-config --exists grpc++ || { echo "cpp_grpc: gRPC C++ not found (pkg-config grpc++): run tools/setup.sh --cpp" >&2; exit 1; }
# ccache (tools/setup.sh --cpp installs it) keeps the objects of sources it has compiled before, keyed by the
# preprocessed source and the flags: a fresh checkout's build then takes 3.5 s (link and pkg-config) instead
# of 10 s here. The objects' DWARF keep the directory of the checkout that compiled them first
# (CCACHE_NOHASHDIR: otherwise -g puts each checkout's path in the key, and a second checkout never hits);
# perf reads their unwinding tables and symbols, not that path.
if command -v ccache >/dev/null; then
  CCACHE_NOHASHDIR=true make -s -j2 CXX="ccache ${CXX:-g++}" bin/cpp_grpc
else
  make -s -j2 bin/cpp_grpc
fi
