"""An OTLP profile sent to an OpenTelemetry Collector, or any endpoint that takes OpenTelemetry's profiles signal
(`report.py export --otlp-endpoint URL`, and profile.sh run's and attach's for each profile they make).

The request is an ExportProfilesServiceRequest of opentelemetry-proto's collector/profiles/v1development: over
gRPC (ProfilesService/Export) to host:port or grpc://host:port, over HTTP for an http:// or https:// URL (a POST
of the protobuf, `Content-Type: application/x-protobuf`, to its path, /v1development/profiles when it names
none, as the Collector's OTLP receiver serves it). No TLS on gRPC and no authentication: send to a Collector
near you, which forwards with its own (docs/fleet.md).

The protobuf bytes export writes for OTLP are already such a request: ProfilesData and the request have the same
two fields (resource_profiles = 1, dictionary = 2), so a file is sent as it is; OTLP's JSON (-o FILE.json) is
read into the request, its ids in hex as OTLP's JSON gives them or in base64 as protobuf's JSON mapping does, and
sent as protobuf.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit, urlunsplit

from rpcprof.errors import EXIT_FAILED, UserError

OTLP_TIMEOUT_S = 10.0       # --otlp-timeout: an endpoint that has not answered after this long is given up
GRPC_METHOD = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
HTTP_PATH = "/v1development/profiles"
FORMS = "host:port or grpc://host:port (gRPC), or http://host:port[/path] (HTTP, path /v1development/profiles by default)"


class Endpoint(NamedTuple):
    url: str                # as given
    target: str             # gRPC's host:port, or the URL posted to
    http: bool

    def __str__(self) -> str:
        return self.url


def endpoint(url: str) -> Endpoint:
    """The endpoint --otlp-endpoint names; UserError (exit 2) naming the forms it takes when it is none of them."""
    parts = urlsplit(url if "://" in url else f"grpc://{url}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.hostname and parts.scheme in ("http", "https") and not parts.fragment:
        return Endpoint(url, urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") or HTTP_PATH,
                                         parts.query, "")), True)
    if parts.hostname and port and parts.scheme == "grpc" and parts.path in ("", "/") and not parts.query:
        return Endpoint(url, parts.netloc, False)
    raise UserError(f"--otlp-endpoint {url!r}: give {FORMS}")


def request_body(path: Path) -> bytes:
    """The ExportProfilesServiceRequest of an OTLP file export wrote: its bytes, or its JSON read as protobuf."""
    if path.suffix.lower() != ".json":
        return path.read_bytes()
    import json
    from google.protobuf import json_format
    from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
    doc = json.loads(path.read_text(encoding="utf-8"))
    ids = [(link, ("traceId", 16), ("spanId", 8)) for link in doc.get("dictionary", {}).get("linkTable", [])]
    ids += [(profile, ("profileId", 16)) for resource in doc.get("resourceProfiles", [])
            for scope in resource.get("scopeProfiles", []) for profile in scope.get("profiles", [])]
    for message, *fields in ids:
        for key, size in fields:
            if key in message:
                message[key] = _base64_id(message[key], size)
    return json_format.ParseDict(doc, ExportProfilesServiceRequest()).SerializeToString()


def _base64_id(text: str, size: int) -> str:
    """An id of size bytes as the protobuf JSON mapping reads bytes (base64): OTLP's JSON gives trace, span and
    profile ids in hex (opentelemetry-proto's JSON Protobuf Encoding), 2 x size hex digits, which no base64 id of
    that size is; any other text is left as it is."""
    if isinstance(text, str) and len(text) == 2 * size and all(c in "0123456789abcdefABCDEF" for c in text):
        import base64
        return base64.b64encode(bytes.fromhex(text)).decode()
    return text


def push_file(path: Path, to: Endpoint, timeout: float = OTLP_TIMEOUT_S) -> None:
    """Send the OTLP profile in path (protobuf, or JSON for FILE.json) to an endpoint; UserError (exit 1), one line
    saying what the endpoint did, when it does not take it within timeout seconds."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceResponse
    answer = (_write_http if to.http else _write_grpc)(to, request_body(Path(path)), timeout)
    try:
        partial = ExportProfilesServiceResponse.FromString(answer).partial_success
    except DecodeError:                     # an answer that is no response: the endpoint took the request
        return
    if partial.rejected_profiles:
        raise UserError(f"--otlp-endpoint {to}: rejected {partial.rejected_profiles} profile(s): "
                        f"{partial.error_message or 'no reason given'}", EXIT_FAILED)


def _write_grpc(to: Endpoint, body: bytes, timeout: float) -> bytes:
    """body sent to ProfilesService/Export as it is (no serializer); the response's bytes."""
    import grpc                             # imported late: grpcio takes a while to import
    with grpc.insecure_channel(to.target) as channel:
        export = channel.unary_unary(GRPC_METHOD, request_serializer=None, response_deserializer=None)
        try:
            return export(body, timeout=timeout)
        except grpc.RpcError as e:
            code, details = e.code(), e.details() or ""
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        raise UserError(f"--otlp-endpoint {to}: no answer within {timeout:g} s (--otlp-timeout)", EXIT_FAILED)
    if code == grpc.StatusCode.UNAVAILABLE:
        raise UserError(f"--otlp-endpoint {to}: cannot reach it ({details})", EXIT_FAILED)
    hint = ("; a Collector takes messages up to its receiver's max_recv_msg_size_mib (4 MiB unless set)"
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED else "")
    raise UserError(f"--otlp-endpoint {to}: refused the profile (gRPC {code.name}: {details}){hint}", EXIT_FAILED)


def _write_http(to: Endpoint, body: bytes, timeout: float) -> bytes:
    """body POSTed as application/x-protobuf; the response's bytes."""
    import urllib.error
    import urllib.request
    request = urllib.request.Request(to.target, data=body, method="POST",
                                     headers={"Content-Type": "application/x-protobuf"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as e:
        said = _status_message(e.read())
        raise UserError(f"--otlp-endpoint {to}: refused the profile (HTTP {e.code} {e.reason}"
                        f"{': ' + said if said else ''})", EXIT_FAILED) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        if isinstance(reason, TimeoutError):
            raise UserError(f"--otlp-endpoint {to}: no answer within {timeout:g} s (--otlp-timeout)",
                            EXIT_FAILED) from None
        raise UserError(f"--otlp-endpoint {to}: cannot reach it ({getattr(reason, 'strerror', None) or reason})",
                        EXIT_FAILED) from None


def _status_message(body: bytes) -> str:
    """The message of the google.rpc.Status an OTLP/HTTP endpoint answers an error with (code = 1, message = 2);
    '' when the body is not one. ExportProfilesPartialSuccess has those fields on the wire (rejected_profiles = 1,
    a varint as code is; error_message = 2, a string), so it reads a Status."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesPartialSuccess
    try:
        return ExportProfilesPartialSuccess.FromString(body).error_message
    except DecodeError:
        return ""
