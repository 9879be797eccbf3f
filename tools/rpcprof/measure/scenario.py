"""Workloads (scenarios): which RPC is called with which payload, and what a correct reply is.

Payloads are text-format protobuf in servers/proto/, encoded with ``protoc --encode`` so that no
generated code is needed: h2load gets the gRPC-framed bytes, ghz the JSON, the probe the raw bytes.
"""
from __future__ import annotations

import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.paths import PROTO_DIR


@dataclass(frozen=True)
class Scenario:
    name: str
    proto: str      # file name in servers/proto
    package: str

    @property
    def method(self) -> str:
        """gRPC path, e.g. /helloworld.Greeter/SayHello."""
        return f"/{self.package}.Greeter/SayHello"

    @property
    def ghz_call(self) -> str:
        return f"{self.package}.Greeter/SayHello"

    @property
    def proto_path(self) -> Path:
        return PROTO_DIR / self.proto

    @property
    def json_path(self) -> Path:
        return PROTO_DIR / f"{self.package}.json"

    def _protoc(self, args: list[str], data: bytes) -> bytes:
        if not shutil.which("protoc"):
            raise UserError("protoc not found: run tools/setup.sh (Debian package protobuf-compiler)")
        proc = subprocess.run(["protoc", f"-I{PROTO_DIR}", *args, self.proto], input=data,
                              capture_output=True, cwd=PROTO_DIR)
        if proc.returncode != 0:
            raise UserError(f"protoc {' '.join(args)} failed: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout

    def request_bytes(self) -> bytes:
        text = (PROTO_DIR / f"{self.package}.txtpb").read_bytes()
        return self._protoc([f"--encode={self.package}.HelloRequest"], text)

    def expected_reply_bytes(self) -> bytes:
        text = (PROTO_DIR / f"{self.package}.reply.txtpb").read_bytes()
        return self._protoc([f"--encode={self.package}.HelloReply"], text)

    def decode_reply(self, data: bytes) -> str:
        """Canonical text of a HelloReply, for comparing replies regardless of field order."""
        return self._protoc([f"--decode={self.package}.HelloReply"], data).decode(errors="replace")


SCENARIOS = {
    "helloworld": Scenario("helloworld", "helloworld.proto", "helloworld"),
    "complex_proto": Scenario("complex_proto", "complexproto.proto", "complexproto"),
}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise UserError(f"unknown scenario {name!r}: choose one of {', '.join(SCENARIOS)}") from None


def grpc_frame(message: bytes) -> bytes:
    """A gRPC length-prefixed message: 1 byte compressed flag (0), 4 bytes big-endian length."""
    return struct.pack(">BI", 0, len(message)) + message


def probe(scenario: Scenario, port: int, timeout: float = 1.0) -> str | None:
    """Make one real gRPC call. Returns None when the reply is correct with status OK,
    otherwise a short description of what was wrong (connection refused, status, content)."""
    import grpc  # imported late: grpcio takes ~0.2 s to import

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(scenario.method)
        try:
            reply = call(scenario.request_bytes(), timeout=timeout)
        except grpc.RpcError as e:
            return f"grpc-status {e.code().name}: {e.details()}"
    want = scenario.decode_reply(scenario.expected_reply_bytes())
    got = scenario.decode_reply(reply)
    if got != want:
        return f"wrong reply: got {got.strip()[:120]!r}, want {want.strip()[:120]!r}"
    return None
