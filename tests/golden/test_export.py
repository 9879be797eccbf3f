"""report.py export: pprof, speedscope and collapsed files that other tools read with rpcprof's shares."""
import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fill

from rpcprof.analyze.categorize import open_folded
from rpcprof.cli.common import run_click
from rpcprof.cli.report import main
from pprof_proto import profile_pb2

DATA = Path(__file__).parents[1] / "data"
FOLDED = DATA / "runs" / "seed-001" / "rust_tonic_mt" / "profile.folded.gz"
GO = shutil.which("go") or "/usr/local/go/bin/go"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def shares(level="1"):
    out = run("table", FOLDED, "--level", level, "--format", "json")
    return {k: v for k, v in json.loads(out.stdout)[0].items() if k not in ("profile", "samples")}


@pytest.fixture(scope="module")
def pprof_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "tonic.pb.gz"
    assert run("export", FOLDED, "--format", "pprof", "-o", out).exit_code == 0
    return out


def pprof_share(path, tag):
    """The share go tool pprof gives to the samples labelled tag (key=value), no node dropped."""
    out = subprocess.run([GO, "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=1000000",
                          f"-tagfocus={tag}", str(path)], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"accounting for \S+, ([\d.]+)% of", out).group(1))


@pytest.mark.parametrize("category", ["send", "protocol", "runtime", "app"])
@pytest.mark.slow
def test_go_tool_pprof_gives_report_pys_shares(pprof_file, category):
    assert pprof_share(pprof_file, f"category={category}") == pytest.approx(shares()[category], abs=0.01)


@pytest.mark.slow
def test_go_tool_pprof_gives_level2_shares(pprof_file):
    want = shares("2")
    for sub in ("send/loopback", "protocol/http2"):
        assert pprof_share(pprof_file, f"subcategory={sub}") == pytest.approx(want[sub], abs=0.01)


def test_pprof_file_is_a_valid_profile_proto(pprof_file):
    profile = profile_pb2.Profile.FromString(gzip.decompress(pprof_file.read_bytes()))
    stacks = open_folded(FOLDED)
    strings = list(profile.string_table)
    assert strings[0] == "" and len(profile.sample) == len(stacks)
    assert [strings[profile.sample_type[0].type], strings[profile.sample_type[0].unit]] == ["cpu", "nanoseconds"]
    first = profile.sample[0]
    functions = {f.id: strings[f.name] for f in profile.function}
    locations = {loc.id: functions[loc.line[0].function_id] for loc in profile.location}
    assert [locations[i] for i in first.location_id] == list(reversed(stacks[0][0]))     # leaf first
    assert {strings[lab.key] for lab in first.label} >= {"category", "tax"}


def test_speedscope_file_holds_every_stack_and_weight(tmp_path):
    out = tmp_path / "p.speedscope.json"
    assert run("export", FOLDED, "--format", "speedscope", "-o", out).exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    profile = doc["profiles"][0]
    frames = [f["name"] for f in doc["shared"]["frames"]]
    stacks = open_folded(FOLDED)
    assert profile["type"] == "sampled" and profile["unit"] == "nanoseconds"
    assert [[frames[i] for i in s] for s in profile["samples"]] == [f for f, _ in stacks]
    assert profile["weights"] == [w for _, w in stacks] and profile["endValue"] == sum(profile["weights"])


def test_collapsed_round_trips_and_hostile_names_survive(tmp_path):
    for source in (FOLDED, DATA / "hostile.folded"):
        out = tmp_path / "p.collapsed"
        assert run("export", source, "--format", "collapsed", "-o", out).exit_code == 0
        assert open_folded(out) == open_folded(source)
        assert run("export", source, "--format", "pprof", "-o", tmp_path / "h.pb.gz").exit_code == 0


@pytest.mark.parametrize("args, message", [
    (["/nonexistent/profile.folded", "--format", "pprof", "-o", "OUT"], "no such folded file"),
    ([DATA / "captures.yaml", "--format", "pprof", "-o", "OUT"], "not a folded stack"),
    ([FOLDED, "--format", "flamegraph", "-o", "OUT"], "Invalid value for '--format'"),
    ([FOLDED, "--format", "pprof", "-o", "/proc/nope/out.pb.gz"], "cannot write it"),
    ([FOLDED, "--format", "collapsed", "-o", FOLDED], "is the profile being exported"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    args = [tmp_path / "out" if a == "OUT" else a for a in args]
    done = subprocess.run([str(Path(__file__).parents[2] / "report.py"), "export", *map(str, args)],
                          capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1 and not done.stdout, done.stderr


def test_a_pprof_export_read_back_with_no_option_gives_the_runs_shares_app_included(pprof_file):
    back = run("table", pprof_file, "--format", "json")
    assert back.exit_code == 0, back.output
    got = {k: v for k, v in json.loads(back.stdout)[0].items() if k not in ("profile", "samples")}
    want = shares()
    assert want["app"] > 0.5                   # the run's app pattern (result.json) decides real samples
    assert got == pytest.approx(want, abs=0.1)


def test_an_app_comment_that_is_no_regex_is_one_line_naming_the_file(pprof_file, tmp_path, capsys):
    profile = profile_pb2.Profile.FromString(gzip.decompress(pprof_file.read_bytes()))
    profile.string_table[profile.comment[0]] = "rpcprof app: ("
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes(gzip.compress(profile.SerializeToString()))
    with pytest.raises(SystemExit) as e:
        run_click(main, ["table", str(bad)])
    err = capsys.readouterr().err
    assert e.value.code != 0 and len(err.splitlines()) == 1
    assert err.startswith(f"report.py: error: {bad}: its comment `rpcprof app: ...`: invalid regex '('")


def otlp_document(path):
    """The ProfilesData of an otlp export, parsed against the pinned opentelemetry-proto's schema (JSON: strictly,
    an unknown field is an error)."""
    from google.protobuf import json_format
    from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp
    if path.suffix == ".json":
        return json_format.Parse(path.read_text(), otlp.ProfilesData())
    return otlp.ProfilesData.FromString(path.read_bytes())


def otlp_shares(data, key):
    """{value of attribute key: share of the values [%]} over every sample."""
    d = data.dictionary
    strings = list(d.string_table)
    weights, total = {}, 0
    for sample in data.resource_profiles[0].scope_profiles[0].profiles[0].samples:
        total += sample.values[0]
        for i in sample.attribute_indices:
            if strings[d.attribute_table[i].key_strindex] == key:
                value = d.attribute_table[i].value.string_value
                weights[value] = weights.get(value, 0) + sample.values[0]
    return {k: 100 * w / total for k, w in weights.items()}


@pytest.fixture(scope="module", params=["tonic.otlp.json", "tonic.otlp.pb"])
def otlp_file(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("otlp") / request.param
    assert run("export", FOLDED, "--format", "otlp", "-o", out).exit_code == 0
    return out


@pytest.mark.parametrize("key, level, view", [("category", "1", "category"), ("subcategory", "2", "category"),
                                              ("tax", "1", "tax")])
def test_otlp_export_gives_report_pys_shares(otlp_file, key, level, view):
    out = run("table", FOLDED, "--level", level, "--view", view, "--format", "json")
    want = {k: v for k, v in json.loads(out.stdout)[0].items() if k not in ("profile", "samples")}
    got = otlp_shares(otlp_document(otlp_file), key)
    if key == "subcategory":             # only the groups of split categories are subcategories
        want = {k: v for k, v in want.items() if "/" in k}
    assert {k for k, v in want.items() if v > 0} == set(got)
    assert got == pytest.approx({k: want[k] for k in got}, abs=1e-9)


def test_otlp_export_holds_every_stack_leaf_first_with_its_weight(otlp_file):
    data = otlp_document(otlp_file)
    d = data.dictionary
    strings = list(d.string_table)
    assert strings[0] == "" and len(d.location_table[0].lines) == 0 and len(d.stack_table[0].location_indices) == 0
    profile = data.resource_profiles[0].scope_profiles[0].profiles[0]
    assert [strings[profile.sample_type.type_strindex], strings[profile.sample_type.unit_strindex]] == ["cpu", "nanoseconds"]
    names = [strings[f.name_strindex] for f in d.function_table]
    stacks = [[names[d.location_table[i].lines[0].function_index] for i in reversed(d.stack_table[s.stack_index].location_indices)]
              for s in profile.samples]
    assert list(zip(stacks, (s.values[0] for s in profile.samples))) == [(f, w) for f, w in open_folded(FOLDED)]


def test_an_otlp_export_to_a_full_disk_is_one_line_and_leaves_no_file(small_disk, capsys):
    fill(small_disk)
    out = small_disk / "tonic.otlp.pb"
    with pytest.raises(SystemExit) as e:
        run_click(main, ["export", str(FOLDED), "--format", "otlp", "-o", str(out)])
    err = capsys.readouterr().err
    assert e.value.code != 0 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"report.py: error: cannot write {out}: No space left on device; free space or choose another -o")
    assert not out.exists()


@pytest.mark.parametrize("body", ["main;w_1;leaf_1 3\nmain;w_2;leaf_2 007\nlone 0\n;;x 12\nmain;w_1;leaf_3 5",
                                  "a 1\n\nb 2\n", "a 1\r\nb 2\r\n", "a 0\nb 0\n", "a\xff;b 4\n\u00e9 1\n", "a;b x\n"])
@pytest.mark.parametrize("fmt", ["collapsed", "pprof", "speedscope", "otlp"])
def test_every_format_holds_the_stacks_the_folded_reader_gives(tmp_path, body, fmt):
    """Every export of a file holds the stacks and weights open_folded gives of it, in its order (blank lines
    and CR line ends too, which the core is given as collapsed lines), or refuses it with open_folded's one line
    (a damaged line, no samples), leaving no file."""
    from rpcprof.analyze.categorize import load_rules
    from rpcprof.errors import UserError
    from rpcprof.report.export import export
    path = tmp_path / "in.folded"
    path.write_bytes(body.encode("utf-8", "surrogateescape") if "\xff" not in body else body.encode("latin-1"))
    out = tmp_path / f"out.{fmt}"
    try:
        want = [(";".join(frames), w) for frames, w in open_folded(path)]
    except UserError as e:
        with pytest.raises(UserError, match=re.escape(str(e))):
            export(path, load_rules(), fmt, out)
        assert not out.exists()
        return
    assert export(path, load_rules(), fmt, out) == len(want)
    assert stacks_in(out, fmt) == want


def stacks_in(out: Path, fmt: str) -> list[tuple[str, int]]:
    """(stack root first, weight) of each sample an export holds, read with the format's own reader."""
    if fmt == "collapsed":
        return [(s, int(w)) for s, w in (line.rsplit(" ", 1) for line in out.read_text(encoding="utf-8").splitlines())]
    if fmt == "speedscope":
        doc = json.loads(out.read_text(encoding="utf-8"))
        names = [f["name"] for f in doc["shared"]["frames"]]
        prof = doc["profiles"][0]
        return [(";".join(names[i] for i in s), w) for s, w in zip(prof["samples"], prof["weights"])]
    if fmt == "pprof":
        p = profile_pb2.Profile.FromString(gzip.decompress(out.read_bytes()))
        name = {f.id: p.string_table[f.name] for f in p.function}
        loc = {loc.id: name[loc.line[0].function_id] for loc in p.location}
        return [(";".join(loc[i] for i in reversed(s.location_id)), s.value[0]) for s in p.sample]
    from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp
    data = otlp.ProfilesData.FromString(out.read_bytes())
    d = data.dictionary
    frame = [d.string_table[d.function_table[loc.lines[0].function_index].name_strindex] if loc.lines else ""
             for loc in d.location_table]
    prof = data.resource_profiles[0].scope_profiles[0].profiles[0]
    return [(";".join(frame[i] for i in reversed(d.stack_table[s.stack_index].location_indices)), s.values[0])
            for s in prof.samples]


@pytest.mark.parametrize("fmt", ["pprof", "otlp", "speedscope"])
def test_a_gzip_stream_cut_short_is_one_line_naming_the_file(tmp_path, fmt, capsys):
    """The core refuses a gzip'd file whose stream ends early; export then says so in one line, and writes nothing."""
    cut = tmp_path / "cut.folded.gz"
    cut.write_bytes(FOLDED.read_bytes()[:-4000])
    out = tmp_path / f"out.{fmt}"
    with pytest.raises(SystemExit) as e:
        run_click(main, ["export", str(cut), "--format", fmt, "-o", str(out)])
    err = capsys.readouterr().err
    assert e.value.code != 0 and len(err.splitlines()) == 1 and "Traceback" not in err and str(cut) in err
    assert not out.exists()


def test_otlp_carries_what_consumers_key_on(tmp_path):
    """A run's OTLP profile names its service and process, its window's start and length, its period type and
    period (the weights' gcd), each frame's type (kernel for inferno's _[k]), and the dictionary's zero entries
    (link_table[0] with zero ids)."""
    from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp
    out = tmp_path / "p.otlp"
    assert CliRunner().invoke(main, ["export", str(FOLDED), "--format", "otlp", "-o", str(out)]).exit_code == 0
    data = otlp.ProfilesData.FromString(out.read_bytes())
    d, rp = data.dictionary, data.resource_profiles[0]
    attrs = {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in rp.resource.attributes}
    assert attrs["service.name"] == "rust_tonic_mt" and isinstance(attrs["process.pid"], int) and attrs["process.pid"] > 0
    prof = rp.scope_profiles[0].profiles[0]
    s = d.string_table
    assert (s[prof.period_type.type_strindex], s[prof.period_type.unit_strindex]) == ("cpu", "nanoseconds")
    weights = [smp.values[0] for smp in prof.samples]
    from math import gcd
    from functools import reduce
    assert prof.period == reduce(gcd, weights) > 0
    assert prof.time_unix_nano > 0 and prof.duration_nano > 0
    assert d.link_table[0].trace_id == bytes(16) and d.link_table[0].span_id == bytes(8)
    assert all(not t.ListFields() for t in (d.mapping_table[0], d.location_table[0], d.function_table[0],
                                           d.attribute_table[0], d.stack_table[0]))
    kinds = {}
    for loc in d.location_table[1:]:
        name = s[d.function_table[loc.lines[0].function_index].name_strindex]
        (kind,) = [d.attribute_table[i] for i in loc.attribute_indices]
        assert s[kind.key_strindex] == "profile.frame.type"
        kinds.setdefault(kind.value.string_value, []).append(name)
    assert kinds["kernel"] and all(n.endswith("_[k]") for n in kinds["kernel"])
    assert kinds["native"] and not any(n.endswith("_[k]") for n in kinds["native"])
