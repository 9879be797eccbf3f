#!/usr/bin/env bash
# Installs the locked dependencies with `npm ci`, only when node_modules is missing or older than
# package-lock.json (npm ci writes node_modules/.package-lock.json). Install scripts are skipped: the only
# one in the tree (protobufjs's postinstall) just prints a version-scheme warning.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -f node_modules/.package-lock.json ] || [ node_modules/.package-lock.json -ot package-lock.json ]; then
  npm ci --ignore-scripts --no-audit --no-fund
fi
