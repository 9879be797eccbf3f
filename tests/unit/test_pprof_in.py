"""pprof_in.py and the core's reader (tools/core/src/pprof_in.rs): pprof profiles read into (frames root-first,
weight), which files are pprof, and every damaged or hostile profile refused with one line naming the file and
the fix."""
import gzip
import json
import zlib
from types import SimpleNamespace

import pytest

from rpcprof import pprof_in
from rpcprof.cli.common import run_click
from rpcprof.cli.report import main
from rpcprof.errors import UserError
from rpcprof.folded import open_folded
from pprof_proto import profile_pb2 as pb
from rpcprof.pprof_in import app_of, is_pprof, sample_type_of


def build(samples, types=(("samples", "count"), ("cpu", "nanoseconds")), locations=None, mappings=(),
          functions=None) -> pb.Profile:
    """A profile: samples are (location ids leaf first, values, labels); locations {id: ([function ids, leaf
    first], mapping id)}; functions {id: name}; mappings [(id, file name)]."""
    strings = {"": 0}

    def s(text):
        return strings.setdefault(text, len(strings))

    p = pb.Profile()
    for t, u in types:
        p.sample_type.add(type=s(t), unit=s(u))
    for mid, filename in mappings:
        p.mapping.add(id=mid, filename=s(filename))
    for fid, name in (functions or {}).items():
        p.function.add(id=fid, name=s(name), system_name=s(name))
    for lid, (fids, mid) in (locations or {}).items():
        loc = p.location.add(id=lid, mapping_id=mid)
        for fid in fids:
            loc.line.add(function_id=fid)
    for lids, values, labels in samples:
        smp = p.sample.add(location_id=lids, value=values)
        for k, v in labels.items():
            smp.label.add(key=s(k), str=s(v))
    p.string_table.extend(strings)
    return p


def write(tmp_path, profile, name="p.pb.gz", compress=True):
    data = profile.SerializeToString() if isinstance(profile, pb.Profile) else profile
    path = tmp_path / name
    path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
    return path


GO_LIKE = dict(
    functions={1: "main.handler", 2: "runtime.mallocgc", 3: "runtime.newobject", 4: "google.golang.org/grpc.(*Server).processRPC",
               5: "tcp_sendmsg"},
    # location 1: mallocgc inlined into newobject; 2: the handler; 3: the gRPC caller; 4: an unsymbolised libc frame;
    # 5: a kernel frame as parca-agent maps it; 6: no mapping, no lines
    locations={1: ([2, 3], 0), 2: ([1], 0), 3: ([4], 0), 4: ([], 1), 5: ([5], 2), 6: ([], 0)},
    mappings=[(1, "/usr/lib/x86_64-linux-gnu/libc.so.6"), (2, "[kernel.kallsyms]")],
    samples=[([1, 2, 3], [3, 30_000_000], {"span": "a"}),
             ([1, 2, 3], [2, 20_000_000], {"span": "b"}),        # the same stack, another label: summed
             ([2, 3], [1, 10_000_000], {}),
             ([5, 4, 3], [4, 40_000_000], {}),
             ([6], [0, 0], {})],                                  # no value: left out
)


def test_a_go_like_profile_reads_cpu_nanoseconds_root_first_with_inlined_frames(tmp_path):
    path = write(tmp_path, build(**GO_LIKE))
    stacks = open_folded(path)                          # the one hook: every folded-input command reads it
    assert stacks == [
        (["google.golang.org/grpc.(*Server).processRPC", "main.handler", "runtime.newobject", "runtime.mallocgc"],
         50_000_000),
        (["google.golang.org/grpc.(*Server).processRPC", "main.handler"], 10_000_000),
        (["google.golang.org/grpc.(*Server).processRPC", "[libc.so.6]", "tcp_sendmsg_[k]"], 40_000_000),
    ]                                                   # in the order first met
    assert sample_type_of(path) == ("cpu", "nanoseconds")


def test_without_cpu_nanoseconds_the_samples_are_counted(tmp_path):
    path = write(tmp_path, build(**{**GO_LIKE, "types": [("samples", "count")],
                                    "samples": [(s, v[:1], lab) for s, v, lab in GO_LIKE["samples"]]}))
    assert sorted(w for _, w in open_folded(path)) == [1, 4, 5]
    assert sample_type_of(path) == ("samples", "count")


def test_the_project_exports_round_trip(tmp_path):
    """report.py export --format pprof, read back: the same stacks and weights (labels dropped)."""
    source = tmp_path / "x.folded"
    source.write_text("main;a;b 3000\nmain;a 1000\nmain;tcp_sendmsg_[k] 2000\n")
    out = tmp_path / "x.pb.gz"
    assert run(["export", source, "--format", "pprof", "-o", out])[0] == 0
    assert open_folded(out) == open_folded(source)


@pytest.mark.parametrize("name, content, expected", [
    ("cpu.pb.gz", b"", True), ("cpu.pb", b"", True), ("cpu.pprof", b"", True), ("CPU.PPROF.GZ", b"", True),
    ("profile", gzip.compress(b"\x0a\x04\x08\x01\x10\x02", mtime=0), True),     # curl -o profile .../debug/pprof/profile
    ("profile.folded.gz", gzip.compress(b"main;a 1\n", mtime=0), False),          # gzip'd folded text, as before
    ("profile.folded", b"main;a 1\n", False), ("missing", None, False),
])
def test_which_files_are_pprof(tmp_path, name, content, expected):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    assert is_pprof(path) is expected


def run(args):
    """(exit code, stdout, stderr) of report.py ARGS in-process through its error boundary."""
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as e:
        run_click(main, [str(a) for a in args])
    return e.value.code, out.getvalue(), err.getvalue()


GOOD = build(**GO_LIKE).SerializeToString()


def out_of_range_name():
    p = build(**GO_LIKE)
    p.function[0].name = 999
    return p.SerializeToString()


def negative():
    p = build(**GO_LIKE)
    p.sample[0].value[1] = -5
    return p.SerializeToString()


def huge():
    p = build(**GO_LIKE)
    p.sample[0].value[1] = 10 ** 15
    return p.SerializeToString()


def missing_location():
    p = build(**GO_LIKE)
    p.sample[0].location_id.append(77)
    return p.SerializeToString()


def missing_function():
    p = build(**GO_LIKE)
    p.location[0].line.add(function_id=55)
    return p.SerializeToString()


def values_short():
    p = build(**GO_LIKE)
    del p.sample[0].value[1]
    return p.SerializeToString()


def first_string_not_empty():
    p = build(**GO_LIKE)
    p.string_table[0] = "x"
    return p.SerializeToString()


def heap():
    return build(**{**GO_LIKE, "types": [("alloc_objects", "count"), ("alloc_space", "bytes")]}).SerializeToString()


def too_deep():
    p = build(**GO_LIKE)
    p.sample[0].location_id.extend([1] * (1 << 20))           # 2^20 locations of 2 frames each: 2 M frames deep
    return p.SerializeToString()


def no_samples():
    return build(**{**GO_LIKE, "samples": [([1], [5, 0], {})]}).SerializeToString()


# name, the file's bytes (gzip'd unless told), what the one error line must say
HOSTILE = {
    "truncated gzip": (lambda: gzip.compress(GOOD, mtime=0)[:-30], False, "truncated: the gzip stream ends"),
    "damaged gzip": (lambda: gzip.compress(GOOD, mtime=0)[:12] + b"\xff" * 40, False, "damaged gzip"),
    "not a profile": (lambda: b"\xff\xff\xff\xff not protobuf", True, "not a pprof profile (profile.proto does not decode"),
    "text": (lambda: b"hello world", True, "not a pprof profile (profile.proto does not decode"),
    "empty": (lambda: b"", True, "not a pprof profile: it declares no sample type"),
    "gzip'd folded text": (lambda: b"main;a 1\n", True, "not a pprof profile"),
    "string index out of range": (out_of_range_name, True, "function 1's name is string 999, beyond its string table"),
    "negative value": (negative, True, "sample 0 has a negative cpu value (-5)"),
    "huge value": (huge, True, "sample 0's value 1000000000000000 is 10^15 or more"),
    "undefined location": (missing_location, True, "sample 0 names location 77, which it does not define"),
    "undefined function": (missing_function, True, "location 1 names function 55, which it does not define"),
    "values short": (values_short, True, "sample 0 has 1 values for 2 sample types"),
    "string table": (first_string_not_empty, True, "its string table does not start with the empty string"),
    "heap profile": (heap, True, "a pprof profile of alloc_objects/count, alloc_space/bytes, not of CPU"),
    "no samples": (no_samples, True, "no samples (no cpu/nanoseconds value above 0)"),
    "too deep": (too_deep, True, "frames deep, more than any profile's stack"),
}


@pytest.mark.parametrize("case", HOSTILE)
@pytest.mark.parametrize("command", ["table", "top"])
def test_a_damaged_or_hostile_profile_is_one_line_naming_the_file_and_exit_2(tmp_path, case, command):
    make, compress, message = HOSTILE[case]
    path = write(tmp_path, make(), compress=compress)
    args = [command, path] + (["-c", "send"] if command == "top" else [])
    code, out, err = run(args)
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"report.py: error: {path}: "), err
    assert message in lines[0] and "Traceback" not in err and not out
    with pytest.raises(UserError):
        open_folded(path)


def test_a_profile_over_the_size_limit_is_refused_without_reading_it_all(tmp_path, monkeypatch):
    monkeypatch.setattr(pprof_in, "MAX_BYTES", 1000)
    big = build(**{**GO_LIKE, "functions": {**GO_LIKE["functions"], 1: "x" * 5000}}).SerializeToString()
    for compress in (True, False):
        path = write(tmp_path, big, compress=compress)
        with pytest.raises(UserError, match=r"over 0 MiB of profile.proto, more than rpcprof reads: narrow it"):
            open_folded(path)


def test_a_gzip_bomb_stops_at_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(pprof_in, "MAX_BYTES", 1 << 20)
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    # one string of 64 MiB of zeros, in about 64 KB: well-formed as far as it goes
    data = bomb.compress(b"\x32\x80\x80\x80\x20" + b"\0" * (64 << 20)) + bomb.flush()
    path = tmp_path / "bomb.pb.gz"
    path.write_bytes(data)
    with pytest.raises(UserError, match="more than rpcprof reads"):
        open_folded(path)


def test_a_missing_file_and_a_folder_are_named(tmp_path):
    assert run(["table", tmp_path / "nope.pb.gz"])[2].strip() == f"report.py: error: {tmp_path}/nope.pb.gz: no such pprof file"
    folder = tmp_path / "d.pb.gz"
    folder.mkdir()
    assert "is a directory; give a pprof file" in run(["table", folder])[2]


def test_hostile_names_reach_the_reports_escaped(tmp_path):
    """Names with control characters, a newline and the folded separator: the table and the graph are made."""
    hostile = {**GO_LIKE, "functions": {**GO_LIKE["functions"], 1: "evil\x1b[2J;name\nnext"},
               "samples": GO_LIKE["samples"] + [([2], [1, 10_000_000], {})]}
    path = write(tmp_path, build(**hostile))
    code, out, err = run(["top", path, "-c", "other", "--format", "json"])
    assert code == 0, err
    assert any("evil" in row["frame"] for row in json.loads(out))
    code, _, err = run(["svg", path, "-o", tmp_path / "x.svg"])
    assert code == 0 and "Traceback" not in err


# ----- --requests: CPU µs per request from a profile without a run folder ------------------------------

def test_table_with_requests_gives_cpu_us_per_request_by_category(tmp_path):
    path = write(tmp_path, build(**GO_LIKE))
    code, out, err = run(["table", path, "--requests", "1000", "--format", "json"])
    assert code == 0, err
    (row,) = json.loads(out)
    # 100 ms of CPU in the profile over 1,000 requests: 100 µs per request, split by the categories' shares
    assert row["requests"] == 1000 and row["total_us"] == pytest.approx(100.0)
    parts = {k: v for k, v in row.items() if k.endswith("_us") and k != "total_us"}
    assert sum(parts.values()) == pytest.approx(100.0)
    assert row["send_us"] == pytest.approx(40.0)               # the tcp_sendmsg stack: 40 of the 100 ms
    code, out, _ = run(["table", path, "--format", "json"])
    assert "total_us" not in json.loads(out)[0]                # without --requests: shares only


def test_top_with_requests_gives_each_frames_cpu_us_per_request(tmp_path):
    path = write(tmp_path, build(**GO_LIKE))
    code, out, err = run(["top", path, "-c", "send", "--requests", "400", "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)
    assert rows and all(r["us_per_req"] == pytest.approx(r["share"] / 100 * 250.0) for r in rows)


def test_diff_of_two_profiles_with_requests_is_per_request(tmp_path):
    a = write(tmp_path, build(**GO_LIKE), name="a.pb.gz")
    b = write(tmp_path, build(**GO_LIKE), name="b.pb.gz")
    code, out, err = run(["diff", a, b, "-o", tmp_path / "d.svg", "--per-request", "--requests", "1000",
                          "--requests", "500", "--format", "json"])
    assert code == 0, err
    assert (tmp_path / "d.svg").exists()
    # the same CPU over half the requests: every category costs twice as much per request in B
    rows = {r["category"]: r for r in json.loads(out)["categories"]}
    assert rows["send"]["a_us"] == pytest.approx(40.0) and rows["send"]["b_us"] == pytest.approx(80.0)
    assert all(r["b_us"] == pytest.approx(2 * r["a_us"]) and r["delta"] == pytest.approx(0) for r in rows.values())
    code, _, err = run(["diff", a, b, "-o", tmp_path / "e.svg", "--per-request"])
    assert code == 2 and "--requests A_N --requests B_N" in err, err


@pytest.mark.parametrize("args, message", [
    (["--requests", "10", "--requests", "20"], "--requests given 2 time(s) for 1 profile(s)"),
    (["--requests", "0"], "0 is not in the range x>=1"),
])
def test_a_wrong_request_count_is_one_line(tmp_path, args, message):
    path = write(tmp_path, build(**GO_LIKE))
    code, out, err = run(["table", path, *args])
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_requests_on_a_profile_counted_in_samples_is_refused(tmp_path):
    path = write(tmp_path, build(**{**GO_LIKE, "types": [("samples", "count")],
                                    "samples": [(s, v[:1], lab) for s, v, lab in GO_LIKE["samples"]]}))
    code, _, err = run(["table", path, "--requests", "100"])
    assert code == 2 and "needs weights in CPU nanoseconds and this profile's are samples/count" in err, err


# --- read as it streams ------------------------------------------------------------------------------------

@pytest.mark.parametrize("capture", ["go_grpc", "java_grpc", "rust_pajamax"])
def test_an_exported_capture_reads_back_as_its_folded_stacks(tmp_path, capture):
    """The captures exported (labels, the app comment) and read back: the folded file's stacks and weights, its app
    pattern; and the same from two gzip members with zero bytes between them, as some writers leave."""
    path = tmp_path / f"{capture}.pb.gz"
    code, _, err = run(["export", f"tests/data/{capture}.folded.gz", "--format", "pprof", "-o", path, "--app", "Greeter"])
    assert code == 0, err
    stacks = open_folded(path)
    assert stacks == open_folded(f"tests/data/{capture}.folded.gz") and app_of(path) == "Greeter"
    raw = gzip.decompress(path.read_bytes())
    half = len(raw) // 2
    two = tmp_path / "two.pb.gz"
    two.write_bytes(gzip.compress(raw[:half], mtime=0) + b"\0" * 9 + gzip.compress(raw[half:], mtime=0))
    assert open_folded(two) == stacks and app_of(two) == "Greeter"


def test_a_comment_written_unpacked_is_read_too(tmp_path):
    p = build(**GO_LIKE)
    p.string_table.append("rpcprof app: Greeter")
    p.comment.append(len(p.string_table) - 1)
    packed = p.SerializeToString()
    index = len(p.string_table) - 1
    field = bytes([0x6a, 1, index])                              # comment = 13, packed: [index]
    unpacked = packed.replace(field, bytes([0x68, index]))       # the same as one varint field
    assert unpacked != packed
    assert app_of(write(tmp_path, unpacked, compress=False)) == app_of(write(tmp_path, packed, name="q.pb")) == "Greeter"


def test_an_uncompressed_profile_cut_short_in_a_field_is_one_line(tmp_path):
    path = write(tmp_path, GOOD + b"\x32\x05ab", compress=False)     # a string of 5 bytes, 2 of them there
    code, out, err = run(["table", path])
    assert code == 2 and not out and err.splitlines() == [
        f"report.py: error: {path}: not a pprof profile (profile.proto does not decode: the last field is cut short); "
        "give a pprof file (a folded file gzip'd is NAME.gz)"]


def test_the_app_pattern_a_profile_carries_is_named_as_its_comment(tmp_path):
    path = tmp_path / "go.pb.gz"
    assert run(["export", "tests/data/go_grpc.folded.gz", "--format", "pprof", "-o", path, "--app", "SayHello"])[0] == 0
    code, out, err = run(["top", path, "-c", "app", "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)
    assert rows and {r["rule"] for r in rows} == {"app (the profile's comment)"}


def test_a_scratch_folder_without_room_is_one_line(tmp_path, monkeypatch):
    """The stacks' scratch file on a full disk (/dev/full answers every write with ENOSPC): one line, exit 2."""
    path = write(tmp_path, build(**GO_LIKE))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "0.collapsed").symlink_to("/dev/full")
    monkeypatch.setattr(pprof_in, "_scratch", SimpleNamespace(name=str(scratch)))
    monkeypatch.setattr(pprof_in, "_collapsed", {})
    code, out, err = run(["table", path])
    assert code == 2 and not out and len(err.splitlines()) == 1, err
    assert "could not be written to a scratch file" in err and "No space left on device" in err
