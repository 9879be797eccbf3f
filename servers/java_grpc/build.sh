#!/usr/bin/env bash
# Idempotent: a no-op when target/java_grpc.jar is newer than pom.xml, the Java sources and ../proto/*.proto.
# Maven runs offline (-o) once a build with this pom.xml has filled the local repository (~/.m2), so only
# the first build (or one after a version change in pom.xml) needs Maven Central.
set -euo pipefail
cd "$(dirname "$0")"
jar=target/java_grpc.jar
stamp=target/.pom-resolved        # the sha256 of the pom.xml whose dependencies are in the local repository
if [[ -f $jar ]] && [[ -z $(find pom.xml src ../proto -newer "$jar" \( -name pom.xml -o -name '*.java' -o -name '*.proto' \) -print -quit) ]]; then
  exit 0
fi
command -v mvn >/dev/null || { echo "java_grpc: mvn not found: run tools/setup.sh --java (Debian maven)" >&2; exit 1; }
pom_hash=$(sha256sum pom.xml | cut -c1-16)
offline=()
[[ $(cat "$stamp" 2>/dev/null) == "$pom_hash" ]] && offline=(-o)
# Maven 3.8 writes colour resets even in batch mode with -q: strip them (pipefail keeps mvn's exit status)
mvn -B -q -Dstyle.color=never "${offline[@]}" package 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
echo "$pom_hash" > "$stamp"
