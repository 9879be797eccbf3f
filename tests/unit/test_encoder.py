"""export's compiled encoder (tools/encode, report/encoder.py) writes the same bytes as report/export.py's
in-memory writers (to_pprof, to_otlp, to_speedscope), which the Python streamed writers match too: on the real
captures (gzip'd, in one member or two, or not), hostile frame names, the leaves shape with repeated, empty, label-named and non-ASCII frames, with and
without an app pattern, and bytes that are not UTF-8 read as Python reads them. A file it does not take (a CR,
no weight) leaves it to the Python writers, with nothing written and no encoder left running; an output it
cannot write is one line."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.report import encoder
from rpcprof.report.export import export, to_otlp, to_pprof, to_speedscope

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz"))
RULES = load_rules()
APP = r"main\.\(\*server\)|Greeter|<script>"
TYPES = [("samples", "count"), ("cpu", "nanoseconds")]
ODD = ["", "send", "category", "other", "recv", "tcp_sendmsg", "leaf_5", "fn_3", "Greeter::SayHello", "é\u2028x",
       "a b", "nanoseconds", "rpcprof", "\\", 'say "hi"', "tab\there", "\x01\x7f", "emoji \U0001F600", "x" * 20000]


def test_setup_built_the_encoder():
    assert encoder.available(), f"{encoder.ENCODER}: missing; run tools/setup.sh (it builds tools/encode)"


def plain(path: Path, tmp_path: Path) -> Path:
    """The folded file as the encoder takes it: not gzip'd."""
    if path.suffix != ".gz":
        return path
    out = tmp_path / path.name.removesuffix(".gz")
    out.write_bytes(gzip.decompress(path.read_bytes()))
    return out


def encoded(fmt: str, path: Path, rules, sample_type, app=None) -> tuple[int | None, bytes]:
    """(the stacks, the bytes) the encoder writes of path in fmt, to a real file (its stdout is the file's)."""
    scratch = path.with_name(path.name + f".{fmt}.out")
    with scratch.open("wb") as f:
        if fmt == "pprof":
            stacks = encoder.write_pprof(path, rules, sample_type, app, f)
        elif fmt == "otlp":
            stacks = encoder.write_otlp(path, rules, sample_type, f)
        else:
            stacks = encoder.write_speedscope(path, path.name, sample_type, f)
    made = scratch.read_bytes()
    scratch.unlink()
    return stacks, made


def same_everywhere(path: Path, rules, sample_type, app=None) -> None:
    stacks = open_folded(path)
    want = {"pprof": to_pprof(stacks, rules, sample_type, app), "otlp": to_otlp(stacks, rules, sample_type, False),
            "speedscope": to_speedscope(stacks, path.name, sample_type).encode()}
    for fmt, doc in want.items():
        n, made = encoded(fmt, path, rules, sample_type, app)
        assert n == len(stacks), fmt
        assert made == doc, fmt


@pytest.mark.parametrize("app", [None, APP])
@pytest.mark.parametrize("capture", CAPTURES + [DATA / "hostile.folded"], ids=lambda p: p.name.split(".")[0])
def test_encoder_writes_what_python_writes_on_real_captures(tmp_path, capture, app):
    rules = RULES.with_app(app, "--app") if app else RULES
    same_everywhere(plain(capture, tmp_path), rules, TYPES[capture.name.startswith("go")], app)


@pytest.mark.parametrize("capture", CAPTURES[:3] + [DATA / "hostile.folded"], ids=lambda p: p.name.split(".")[0])
def test_encoder_reads_gzipd_files_as_python_does(tmp_path, capture):
    """A gzip'd capture as it is, and one of two gzip members (Python's gzip module reads them one after the
    other)."""
    data = plain(capture, tmp_path).read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    two = tmp_path / f"two-{capture.name.split('.')[0]}.folded.gz"
    two.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
    for path in ([capture] if capture.suffix == ".gz" else []) + [two]:
        same_everywhere(path, RULES, TYPES[0])


def test_a_gzipd_file_cut_short_is_left_to_python(tmp_path):
    path = tmp_path / "cut.folded.gz"
    whole = gzip.compress("".join(f"main;fn_{i % 13};leaf_{i} 3\n" for i in range(50_000)).encode())
    path.write_bytes(whole[:len(whole) // 2])
    for fmt in ("pprof", "otlp", "speedscope"):
        assert encoded(fmt, path, RULES, TYPES[0])[0] is None
    assert encoder.scan(path) is None
    assert encoders_running() == []


@pytest.mark.parametrize("app", [None, APP])
@pytest.mark.parametrize("sample_type", TYPES)
def test_encoder_on_leaves_with_repeats_label_names_and_odd_frames(tmp_path, app, sample_type):
    stacks = [frames for frames, _ in open_folded(CAPTURES[0])[:40]] + [["main", "send"], ["x", "", "y"]]
    path = fleet_folded(tmp_path / "fleet \"é\".folded", 5000, stacks, ODD)
    with path.open("a") as f:          # leaves seen again, frames seen first as callers then as leaves, a count
        f.write("\nmain;worker_1;fn_1;leaf_10 4\nleaf_11;leaf_12 2\nmain;worker_2 0\n;lone 007\nbig 999999999999999")
    same_everywhere(path, RULES.with_app(app, "--app") if app else RULES, sample_type, app)


ILL_FORMED = [b"\x80", b"\xe2\x82", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xff\xfe",
              b"\xe2\x82\xe2\x82\xac", b"\xf8\x88\x80\x80\x80", b"\xe0\x80\x80"]


def test_bytes_that_are_not_utf8_read_as_python_reads_them(tmp_path):
    path = tmp_path / "ill.folded"
    path.write_bytes(b"".join(b"main;x" + bad + b"y;leaf_%d %d\n" % (i, i + 1) + bad + b" 1\n"
                              for i, bad in enumerate(ILL_FORMED)))
    same_everywhere(path, RULES, TYPES[0])


def encoders_running() -> list[int]:
    """The PIDs of this process's children that are the encoder."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if name == "rpcprof-encode" and int(rest[1]) == os.getpid():
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("fmt", ["pprof", "otlp", "speedscope"])
@pytest.mark.parametrize("bad", ["cr", "no-weight", "late-cr"])
def test_a_file_it_does_not_take_is_left_to_python(tmp_path, fmt, bad):
    path = tmp_path / f"{bad}.folded"
    good = "".join(f"main;fn_{i % 13};leaf_{i} {i % 3 + 1}\n" for i in range(300_000))   # more than a block
    path.write_bytes({"cr": b"a;b 1\r\nc 2\n", "no-weight": b"a;b 0\nc 0\n",
                      "late-cr": good.encode() + b"a;b 1\r\n"}[bad])
    stacks, made = encoded(fmt, path, RULES, TYPES[0])
    assert stacks is None
    assert made == b"" or fmt == "pprof"     # pprof's is on its way as it is read: export drops the file
    assert encoders_running() == []
    out = tmp_path / f"out.{fmt}"
    if bad == "no-weight":
        return                          # export's own error: tested with the Python writers
    assert export(path, RULES, fmt, out) == len(open_folded(path))
    assert out.read_bytes() == export_in_memory(fmt, path)


def export_in_memory(fmt: str, path: Path) -> bytes:
    stacks = open_folded(path)
    if fmt == "pprof":
        return to_pprof(stacks, RULES, TYPES[0])
    if fmt == "otlp":
        return to_otlp(stacks, RULES, TYPES[0], False)
    return to_speedscope(stacks, path.name, TYPES[0]).encode()


@pytest.mark.parametrize("fmt", ["pprof", "otlp", "speedscope"])
def test_a_full_disk_is_one_line(tmp_path, fmt):
    path = fleet_folded(tmp_path / "fleet.folded", 3000, [["main", "recv"]])
    done = subprocess.run([sys.executable, str(ROOT / "report.py"), "export", str(path), "--format", fmt,
                           "-o", "/dev/full"], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "/dev/full" in lines[0] and "No space left" in lines[0], done.stderr


LINES = ["a;b 1", "a;b 0", " lead 2", "# c;d 3", "e;f 12 4", "g;h 1.5", "i;j  6", "k;é 7", "m; 9", "n;o 010", ";r 1",
         "s;;t 2", "u 1\r", "", " ", "v", "w 1234567890123456", "x 123456789012345", "y;z 1 ", "z 1\x0b", "a\rb 3",
         "\ufeffbom 4", "q;w -1", "q;w +1", "tab\t5", "a 1;2"]


@pytest.mark.parametrize("i", range(len(LINES)))
def test_the_encoder_takes_the_lines_folded_rows_takes(tmp_path, i):
    from rpcprof.analyze.folded_blocks import Irregular, folded_rows
    path = tmp_path / "f.folded"
    path.write_bytes(("x;y 3\n" + LINES[i] + "\nz 4\n").encode())
    try:
        weights = [int(w) for _, rows in folded_rows(path) for _, _, w in rows]
        from math import gcd
        want = (sum(weights), gcd(*weights), len(weights))
    except Irregular:
        want = None
    assert encoder.scan(path) == want


def test_the_encoder_ends_with_the_process_that_started_it(tmp_path):
    """A forked pass of report.py's that is killed (diff's side A on an error or ^C) cannot stop its encoder: the
    encoder ends with it (PR_SET_PDEATHSIG), rather than reading on with nobody to read its output."""
    import os
    import signal
    import subprocess
    import time
    fifo = tmp_path / "never.folded"
    os.mkfifo(fifo)                                # opened by the encoder, written by nobody: it waits there
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # a pass that starts the encoder and is then killed
        try:
            proc = subprocess.Popen([str(encoder.ENCODER), "scan", str(fifo)], stdout=subprocess.DEVNULL)
            os.write(w, str(proc.pid).encode())
            time.sleep(30)
        finally:
            os._exit(0)
    os.close(w)
    child = int(os.read(r, 20))
    os.close(r)
    deadline = time.monotonic() + 10               # until it waits in the FIFO's open, after its start-up
    while Path(f"/proc/{child}/wchan").read_text() != "wait_for_partner" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert Path(f"/proc/{child}/wchan").read_text() == "wait_for_partner"
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            state = "gone"
        if state in ("Z", "X", "gone"):
            break
        time.sleep(0.05)
    if state not in ("Z", "X", "gone"):
        os.kill(child, signal.SIGKILL)
    assert state in ("Z", "X", "gone"), f"the encoder still runs ({state}) after the process that started it was killed"
