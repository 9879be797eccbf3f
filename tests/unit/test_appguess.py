"""App frames found without --app: on the golden captures, the guessed rule gives the same app share as
the pattern each server's server.yaml names by hand."""
from pathlib import Path

import pytest
import yaml

from rpcprof.analyze.categorize import categorize, load_rules, open_folded
from rpcprof.jobs.process_kind import go_app, guess_app, node_app, python_app, rust_app

DATA = Path(__file__).parents[1] / "data"
CAPTURES = yaml.safe_load((DATA / "captures.yaml").read_text())
ROOT = Path(__file__).resolve().parents[2]
GUESSES = {
    "rust_tonic_mt": lambda: rust_app(str(ROOT / "servers/target/release/rust_tonic"), b"/rustc/"),
    "rust_pajamax": lambda: rust_app(str(ROOT / "servers/target/release/rust_pajamax"), b"/rustc/"),
    "go_grpc": lambda: go_app(b"\xff Go buildinf:\npath\trpcprof/servers/go_grpc\nmod\trpcprof/servers/go_grpc\t(devel)\n"),
    "python_grpcio": lambda: python_app(["python3", str(ROOT / "servers/python_grpcio/server.py")], "/"),
    "node_grpcjs": node_app,
}


@pytest.mark.parametrize("server", sorted(GUESSES))
def test_guessed_app_rule_matches_the_hand_written_one(server):
    rules = load_rules()
    stacks = open_folded(DATA / f"{server}.folded.gz")
    regex, source = GUESSES[server]()
    want = categorize(stacks, rules.with_app(CAPTURES[server]["app"])).share("app")
    got = categorize(stacks, rules.with_app(regex)).share("app")
    assert want > 0 and got == pytest.approx(want), (regex, source)


def test_rust_rule_leaves_generated_grpc_code_to_protocol():
    regex, _ = rust_app("/x/rust_tonic", b"/rustc/")
    rules = load_rules().with_app(regex)
    assert rules.classify_frame("<rust_tonic::HelloGreeter as rust_tonic::helloworld::greeter_server::Greeter>"
                                "::say_hello::{{closure}}")[0] == "app"
    assert rules.classify_frame("<rust_tonic::helloworld::greeter_server::GreeterServer<T> as "
                                "tower_service::Service<http::request::Request<B>>>::call")[0] == "protocol"
    assert rules.classify_frame("<rust_tonic::helloworld::HelloReply as prost::message::Message>::encode_raw")[0] == "protocol"


def test_unknown_native_process_gets_no_rule_and_says_so(tmp_path):
    exe = tmp_path / "server"
    exe.write_bytes(b"\x7fELF not rust, not go")
    regex, source = guess_app("native", str(exe), [str(exe)], "/")
    assert regex is None and "--app" in source
