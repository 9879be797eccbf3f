"""servers/*/server.yaml read through its JSON Schema (rpcprof.schema.SERVER): every server folder's file
loads, and each kind of mistake is one line naming the file, the key and what it takes. Nothing here
builds or starts a server."""
from __future__ import annotations

import pytest
import yaml

from conftest import ROOT
from rpcprof.errors import UserError
from rpcprof.measure import servers

GOOD = {"description": "a test server", "language": "rust", "profiler": "perf", "run": ["./srv", "--port", "{port}"],
        "app": "srv::Handler"}


@pytest.mark.parametrize("name", sorted(p.parent.name for p in (ROOT / "servers").glob("*/server.yaml")))
def test_every_server_yaml_of_the_repository_loads(name):
    spec = servers.load_server(name)
    assert spec.name == name and spec.run and spec.call_graph and spec.workdir in ("folder", "run")


def load(tmp_path, monkeypatch, data):
    (tmp_path / "srv").mkdir()
    (tmp_path / "srv" / "server.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setattr(servers, "SERVERS_DIR", tmp_path)
    return servers.load_server("srv")


def test_a_good_file_gives_its_spec_with_the_defaults(tmp_path, monkeypatch):
    spec = load(tmp_path, monkeypatch, {**GOOD, "params": None})
    assert (spec.call_graph, spec.workdir, spec.params, spec.ruler) == ("dwarf", "folder", {}, None)


@pytest.mark.parametrize("change, message", [
    (dict(colour="red"), "unknown top-level key(s) colour (known: after_profile, app, call_graph, description, "
                         "language, params, profiler, ruler, run, warmup_s, workdir)"),
    (dict(warmup_s=-1), "warmup_s"),
    (dict(app=None, run=None), "key 'run' must be a list, got null"),
    (dict(run=[]), "key 'run' must be a non-empty list of strings (an argv), got []"),
    (dict(run=["./srv", 5]), "key 'run[2]' must be a string, got a number"),
    (dict(profiler="gdb"), "key 'profiler' must be one of perf, py-spy, got 'gdb'"),
    (dict(call_graph="lbr"), "key 'call_graph' must be one of dwarf, dwarf-deep, fp, dwarf-jit, got 'lbr'"),
    (dict(workdir="tmp"), "key 'workdir' must be one of folder, run, got 'tmp'"),
    (dict(params=[1]), "key 'params' must be a mapping, got a list"),
    (dict(app="srv::(Handler"), "app: invalid regex 'srv::(Handler'"),
    (dict(ruler=["x"]), "key 'ruler' must be a string, got a list"),
])
def test_a_mistake_is_one_line_naming_the_file_and_the_key(tmp_path, monkeypatch, change, message):
    with pytest.raises(UserError) as e:
        load(tmp_path, monkeypatch, {**GOOD, **change})
    line = str(e.value)
    assert line.startswith(f"{tmp_path / 'srv' / 'server.yaml'}: ") and message in line and "\n" not in line, line


def test_a_missing_key_is_named(tmp_path, monkeypatch):
    data = dict(GOOD)
    del data["app"]
    with pytest.raises(UserError, match="server.yaml: missing key 'app'; fix it"):
        load(tmp_path, monkeypatch, data)


def test_a_jit_servers_warm_up_and_after_profile_command_are_read():
    from rpcprof.measure.servers import load_server
    spec = load_server("java_grpc")
    assert spec.warmup_s >= 10 and spec.after_profile_argv(4242) == ["jcmd", "4242", "Compiler.perfmap"]
    assert load_server("rust_tonic_mt").warmup_s == 0 and load_server("rust_tonic_mt").after_profile_argv(1) is None
