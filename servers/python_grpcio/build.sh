#!/usr/bin/env bash
# Generates the protobuf/gRPC Python modules from ../proto into gen/ (gitignored) with the project
# virtualenv's grpc_tools.protoc. Idempotent: a no-op when gen/ is newer than the protos and was made
# by the same grpcio-tools/protobuf versions. Interpreter: $PYTHON if set, else ../../.venv/bin/python.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-../../.venv/bin/python}
PROTOS=(../proto/helloworld.proto ../proto/complexproto.proto)
versions=$("$PY" -c 'from importlib.metadata import version as v; print("grpcio-tools", v("grpcio-tools"), "protobuf", v("protobuf"))' 2>/dev/null) || {
  echo "python_grpcio/build.sh: $PY lacks grpcio-tools; install servers/requirements-python.txt into the venv" >&2
  exit 1
}
stamp=gen/.stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$versions" ]; then
  stale=0
  for f in "${PROTOS[@]}" build.sh; do [ "$f" -nt "$stamp" ] && stale=1; done
  [ "$stale" = 0 ] && exit 0
fi
rm -rf gen.tmp && mkdir gen.tmp
"$PY" -m grpc_tools.protoc -I ../proto --python_out=gen.tmp --grpc_python_out=gen.tmp "${PROTOS[@]}"
echo "$versions" > gen.tmp/.stamp
rm -rf gen && mv gen.tmp gen
