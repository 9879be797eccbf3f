#!/usr/bin/env bash
# Idempotent: a no-op when bin/cpp_grpc was built from main.cc, the Makefile and ../proto as they are, with this
# compiler, protoc and gRPC C++; a checkout of the same sources copies the binary another built on this machine
# (../build-cache.sh). gen/ (protoc's output) and bin/ are not tracked.
# Needs g++, pkg-config, Debian libgrpc++-dev and protobuf-compiler-grpc, and uses ccache where present
# (tools/setup.sh --cpp installs them all).
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=servers/build-cache.sh
source ../build-cache.sh

build() {
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
}

# what goes into the binary (a tool missing changes the key: then build says which)
inputs() {
  files_key main.cc Makefile ../proto
  g++ --version; protoc --version
  pkg-config --maximum-traverse-depth=1 --modversion grpc++ protobuf     # 1 s less than following abseil's list
}
cached_build bin/cpp_grpc "cpp_grpc-$( { inputs || true; } 2>&1 | sha256sum | cut -c1-16)" build
