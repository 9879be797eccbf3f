"""Workloads (scenarios): which RPC is called with which payload, and what a server replies.

A server's reply is learned from real calls (learn_reply): any reply that ends with grpc-status 0 and
decodes as the scenario's HelloReply is accepted, whatever its text; its size is what the h2load driver
counts OK responses by. The built-in reply (servers/proto/*.reply.txtpb) is only compared, to say so.

Payloads are text-format protobuf in servers/proto/, encoded with ``protoc --encode`` so that no
generated code is needed: h2load gets the gRPC-framed bytes, ghz the JSON, the probe the raw bytes.
"""
from __future__ import annotations

import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.measure.recorder import require
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
        protoc = require("protoc", "run tools/setup.sh (Debian package protobuf-compiler)")
        proc = subprocess.run([protoc, f"-I{PROTO_DIR}", *args, self.proto], input=data,
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


@dataclass
class Reply:
    """What a server answers the scenario's call with, learned from real calls."""
    sizes: list[int]        # message bytes (before gRPC framing) of each call made
    text: str               # the first reply, decoded
    builtin: bool           # the same as the scenario's built-in reply

    @property
    def framed_len(self) -> int | None:
        """Bytes of one framed reply when every call got the same size; None when sizes vary."""
        return 5 + self.sizes[0] if len(set(self.sizes)) == 1 else None

    def record(self) -> dict:
        return {"message_bytes": sorted(set(self.sizes)), "framed_len": self.framed_len,
                "text": self.text.strip()[:200], "builtin": self.builtin}


def learn_reply(scenario: Scenario, port: int, timeout: float = 1.0, calls: int = 3) -> tuple[Reply | None, str | None]:
    """Make real gRPC calls: (the reply learned, None), or (None, what was wrong: connection refused,
    a grpc-status other than OK, a reply that is not the scenario's HelloReply)."""
    import grpc  # imported late: grpcio takes ~0.2 s to import

    request = scenario.request_bytes()
    replies = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(scenario.method)
        for _ in range(calls):
            try:
                replies.append(call(request, timeout=timeout))
            except grpc.RpcError as e:
                return None, f"grpc-status {e.code().name}: {e.details()}"
    try:
        text = scenario.decode_reply(replies[0])
    except UserError as e:
        return None, f"the reply is not a {scenario.package}.HelloReply ({e})"
    builtin = text == scenario.decode_reply(scenario.expected_reply_bytes())
    return Reply([len(r) for r in replies], text, builtin), None
