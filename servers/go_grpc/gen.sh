#!/usr/bin/env bash
# Regenerates the committed Go code in pb/ from ../proto. Not needed by build.sh (the output is committed).
# Needs protoc plus the pinned plugins:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
set -euo pipefail
cd "$(dirname "$0")"
PATH="$(go env GOPATH)/bin:$PATH"
M=rpcprof/servers/go_grpc
for p in helloworld complexproto; do
  mkdir -p "pb/$p"
  protoc -I ../proto \
    --go_out=. --go_opt=module=$M --go_opt=M$p.proto=$M/pb/$p \
    --go-grpc_out=. --go-grpc_opt=module=$M --go-grpc_opt=M$p.proto=$M/pb/$p \
    "$p.proto"
done
