#!/usr/bin/env bash
# Idempotent: a no-op when target/java_grpc.jar was built from pom.xml, src/ and ../proto as they are, with this
# JDK; a checkout of the same sources copies the jar another built on this machine (../build-cache.sh).
# Maven runs offline (-o) once a build with this pom.xml has filled the local repository (~/.m2), so only
# the first build (or one after a version change in pom.xml) needs Maven Central.
set -euo pipefail
cd "$(dirname "$0")"
jar=target/java_grpc.jar
stamp=target/.pom-resolved        # the sha256 of the pom.xml whose dependencies are in the local repository
# shellcheck source=servers/build-cache.sh
source ../build-cache.sh

build() {
  command -v mvn >/dev/null || { echo "java_grpc: mvn not found: run tools/setup.sh --java (Debian maven)" >&2; exit 1; }
  pom_hash=$(sha256sum pom.xml | cut -c1-16)
  offline=()
  [[ $(cat "$stamp" 2>/dev/null) == "$pom_hash" ]] && offline=(-o)
  # Maven 3.8 writes colour resets even in batch mode with -q: strip them (pipefail keeps mvn's exit status)
  mvn -B -q -Dstyle.color=never "${offline[@]}" package 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
  echo "$pom_hash" > "$stamp"
}

inputs() { files_key pom.xml src ../proto; java -version 2>&1; }       # what goes into the jar
cached_build "$jar" "java_grpc-$( { inputs || true; } | sha256sum | cut -c1-16)" build
