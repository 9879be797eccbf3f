"""report/otlp_push.py: the endpoint forms --otlp-endpoint takes, the request it sends (export's OTLP bytes,
or its JSON read as protobuf) over gRPC and HTTP to a listener in this process, and the one line with exit 1
for an endpoint that refuses, is down or never answers, the file written all the same. A real Collector reads
what is sent in tests/live/test_collector_live.py."""
from __future__ import annotations

import http.server
import json
import socket
import subprocess
import threading
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as service
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2_grpc as service_grpc
from opentelemetry.proto.profiles.v1development import profiles_pb2

from rpcprof.errors import EXIT_FAILED, EXIT_USAGE, UserError
from rpcprof.report.otlp_push import GRPC_METHOD, HTTP_PATH, endpoint, push_file, request_body

ROOT = Path(__file__).resolve().parents[2]
FOLDED = ROOT / "tests" / "data" / "rust_tonic_mt.folded.gz"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """export's OTLP of a capture, protobuf and JSON."""
    folder = tmp_path_factory.mktemp("otlp")
    for name in ("tonic.pb", "tonic.json"):
        done = subprocess.run([str(ROOT / "report.py"), "export", str(FOLDED), "--format", "otlp", "-o",
                               str(folder / name)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return folder / "tonic.pb", folder / "tonic.json"


@pytest.mark.parametrize("url, target, http", [
    ("127.0.0.1:4317", "127.0.0.1:4317", False),
    ("grpc://collector.example:4317", "collector.example:4317", False),
    ("[::1]:4317", "[::1]:4317", False),
    ("http://127.0.0.1:4318", "http://127.0.0.1:4318" + HTTP_PATH, True),
    ("http://127.0.0.1:4318/", "http://127.0.0.1:4318" + HTTP_PATH, True),
    ("https://otlp.example/v1development/profiles", "https://otlp.example/v1development/profiles", True),
    ("http://gateway:8080/otlp/profiles", "http://gateway:8080/otlp/profiles", True),
])
def test_endpoint_forms(url, target, http):
    to = endpoint(url)
    assert (to.target, to.http, str(to)) == (target, http, url)


@pytest.mark.parametrize("url", ["collector", "grpc://collector", "127.0.0.1:port", "ftp://host:21", "http://",
                                 "grpc://host:4317/v1", "unix:///tmp/sock"])
def test_an_endpoint_of_no_form_is_a_usage_error_naming_the_forms(url):
    with pytest.raises(UserError) as e:
        endpoint(url)
    assert e.value.exit_code == EXIT_USAGE and "give host:port or grpc://host:port" in str(e.value)


def test_export_protobuf_is_an_export_request_as_it_is_and_its_json_reads_as_the_same(exported):
    """ProfilesData and ExportProfilesServiceRequest number their two fields alike: the file's bytes are the request."""
    pb, as_json = exported
    fields = [(f.name, f.number, f.message_type.full_name) for f in service.ExportProfilesServiceRequest.DESCRIPTOR.fields]
    assert fields == [(f.name, f.number, f.message_type.full_name) for f in profiles_pb2.ProfilesData.DESCRIPTOR.fields]
    body = pb.read_bytes()
    request = service.ExportProfilesServiceRequest.FromString(body)
    assert request.SerializeToString(deterministic=True) == body        # every byte is a field of the request
    assert request_body(pb) == body
    assert service.ExportProfilesServiceRequest.FromString(request_body(as_json)) == request


def test_a_json_export_with_its_ids_in_hex_as_otlp_json_gives_them_is_the_same_request(exported, tmp_path):
    """OTLP's JSON writes trace and span ids in hex; the protobuf JSON mapping, base64: either is read."""
    pb, as_json = exported
    doc = json.loads(as_json.read_text())
    doc["dictionary"]["linkTable"] = [{"traceId": "00" * 16, "spanId": "00" * 8},
                                      {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174"}]
    hex_json = tmp_path / "hex.json"
    hex_json.write_text(json.dumps(doc))
    request = service.ExportProfilesServiceRequest.FromString(request_body(hex_json))
    zero, link = request.dictionary.link_table
    assert (zero.trace_id, zero.span_id) == (bytes(16), bytes(8))
    assert (link.trace_id.hex(), link.span_id.hex()) == ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174")
    want = service.ExportProfilesServiceRequest.FromString(pb.read_bytes())
    del request.dictionary.link_table[1:]
    del want.dictionary.link_table[:]
    want.dictionary.link_table.add(trace_id=bytes(16), span_id=bytes(8))
    assert request == want


class Profiles(service_grpc.ProfilesServiceServicer):
    """A ProfilesService keeping what it is sent; answers with partial success when told to."""

    def __init__(self, rejected: int = 0):
        self.received, self.rejected = [], rejected

    def Export(self, request, context):
        self.received.append(request)
        answer = service.ExportProfilesServiceResponse()
        if self.rejected:
            answer.partial_success.rejected_profiles = self.rejected
            answer.partial_success.error_message = "no service.name"
        return answer


@pytest.fixture
def grpc_server():
    """Start(servicer) -> the port of a gRPC server on 127.0.0.1 serving it; stopped at the end."""
    servers = []

    def start(servicer) -> int:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        service_grpc.add_ProfilesServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return port
    yield start
    for server in servers:
        server.stop(None)


def test_grpc_sends_the_request_to_profiles_service_export(exported, grpc_server):
    assert GRPC_METHOD == "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
    profiles = Profiles()
    port = grpc_server(profiles)
    for path in exported:
        push_file(path, endpoint(f"127.0.0.1:{port}"), 10)
    want = service.ExportProfilesServiceRequest.FromString(exported[0].read_bytes())
    assert profiles.received == [want, want]


def test_profiles_rejected_by_the_endpoint_are_one_line_and_exit_1(exported, grpc_server):
    port = grpc_server(Profiles(rejected=1))
    with pytest.raises(UserError) as e:
        push_file(exported[0], endpoint(f"grpc://127.0.0.1:{port}"), 10)
    assert e.value.exit_code == EXIT_FAILED and str(e.value).endswith("rejected 1 profile(s): no service.name")


@pytest.fixture
def http_server():
    """Start(status) -> the port of an HTTP server on 127.0.0.1 answering every POST with status, keeping
    (path, content type, body) of each; stopped at the end."""
    servers = []

    def start(status: int, received: list) -> int:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                received.append((self.path, self.headers["Content-Type"],
                                 self.rfile.read(int(self.headers["Content-Length"]))))
                # a google.rpc.Status with its message (field 2), as the Collector's receiver answers an error
                answer = b"" if status == 200 else b"\x08\x03\x12\x0bbad profile"
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_http_posts_the_protobuf_to_the_profiles_path(exported, http_server):
    received = []
    port = http_server(200, received)
    for path in exported:
        push_file(path, endpoint(f"http://127.0.0.1:{port}"), 10)
    body = exported[0].read_bytes()
    assert received == [(HTTP_PATH, "application/x-protobuf", body)] * 2


def test_an_http_error_is_one_line_with_the_endpoints_message(exported, http_server):
    port = http_server(400, [])
    with pytest.raises(UserError) as e:
        push_file(exported[0], endpoint(f"http://127.0.0.1:{port}"), 10)
    assert e.value.exit_code == EXIT_FAILED
    assert str(e.value) == f"--otlp-endpoint http://127.0.0.1:{port}: refused the profile (HTTP 400 Bad Request: bad profile)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("scheme", ["", "http://"])
def test_an_endpoint_that_is_down_is_one_line_and_exit_1(exported, scheme):
    url = f"{scheme}127.0.0.1:{free_port()}"
    with pytest.raises(UserError) as e:
        push_file(exported[0], endpoint(url), 10)
    assert e.value.exit_code == EXIT_FAILED and str(e.value).startswith(f"--otlp-endpoint {url}: cannot reach it (")
    assert "refused" in str(e.value).lower() and "\n" not in str(e.value)


@pytest.mark.parametrize("scheme", ["", "http://"])
def test_an_endpoint_that_never_answers_is_given_up_after_the_timeout(exported, scheme):
    with socket.socket() as silent:             # takes connections (the kernel's backlog) and never reads
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"{scheme}127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(UserError) as e:
            push_file(exported[0], endpoint(url), 0.5)
    assert e.value.exit_code == EXIT_FAILED
    assert str(e.value) == f"--otlp-endpoint {url}: no answer within 0.5 s (--otlp-timeout)"


def test_report_py_export_writes_the_file_then_says_the_endpoint_is_down_in_one_line(tmp_path):
    out, url = tmp_path / "tonic.pb", f"127.0.0.1:{free_port()}"
    done = subprocess.run([str(ROOT / "report.py"), "export", str(FOLDED), "--format", "otlp", "-o", str(out),
                           "--otlp-endpoint", url, "--otlp-timeout", "5"], capture_output=True, text=True)
    assert done.returncode == 1 and out.stat().st_size > 0
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith(f"report.py: error: --otlp-endpoint {url}: cannot reach it")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args, message", [
    (["--format", "pprof", "--otlp-endpoint", "127.0.0.1:4317"], "give --format otlp, not pprof"),
    (["--format", "otlp", "--otlp-endpoint", "collector"], "'collector': give host:port"),
])
def test_report_py_export_refuses_what_it_cannot_send_before_writing(tmp_path, args, message):
    out = tmp_path / "tonic.out"
    done = subprocess.run([str(ROOT / "report.py"), "export", str(FOLDED), "-o", str(out), *args],
                          capture_output=True, text=True)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert not out.exists()


def test_profile_sh_sends_each_profile_until_one_is_not_taken_then_exits_1(grpc_server, capsys, tmp_path):
    """jobs/steps.ProfileSender, as run and attach use it: each profile sent; after a failure, no other is tried."""
    from rpcprof.analyze.categorize import load_rules
    from rpcprof.jobs.steps import ProfileSender
    profiles = Profiles()
    sender = ProfileSender(f"127.0.0.1:{grpc_server(profiles)}", 10)
    run = ROOT / "tests" / "data" / "runs" / "seed-001"
    for _ in range(2):
        sender.send(run, "rust_tonic_mt", load_rules(), None)
    sender.check(tmp_path)
    assert len(profiles.received) == 2
    resource = profiles.received[0].resource_profiles[0].resource
    assert {a.key: a.value.string_value for a in resource.attributes}["service.name"] == "rust_tonic_mt"
    down = ProfileSender(f"127.0.0.1:{free_port()}", 10)
    for _ in range(3):
        down.send(run, "rust_tonic_mt", load_rules(), None)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and "rust_tonic_mt's profile was not sent: --otlp-endpoint" in warnings[0]
    with pytest.raises(UserError) as e:
        down.check(tmp_path)
    assert e.value.exit_code == EXIT_FAILED and f"every profile is in {tmp_path}" in str(e.value)


@pytest.mark.parametrize("command", [["run", "rust_tonic_st"], ["attach", "--pid", "1"]])
def test_profile_sh_refuses_an_endpoint_of_no_form_before_anything_starts(tmp_path, command):
    from conftest import invoke
    from rpcprof.cli import profile as profile_cli
    done = invoke(profile_cli.entry, *command, "--runs-dir", str(tmp_path), "--otlp-endpoint", "collector")
    assert done.code == 2 and "'collector': give host:port" in done.err, done.err
    assert not any(tmp_path.iterdir())


def test_profile_sh_run_refuses_an_endpoint_with_no_profile_to_send(tmp_path):
    from conftest import invoke
    from rpcprof.cli import profile as profile_cli
    done = invoke(profile_cli.entry, "run", "rust_tonic_st", "--no-profile", "--runs-dir", str(tmp_path),
                  "--otlp-endpoint", "127.0.0.1:4317")
    assert done.code == 2 and "not with --no-profile" in done.err, done.err
    assert not any(tmp_path.iterdir())
