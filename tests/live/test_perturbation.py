"""Attribution by perturbation: add one known kind of work per request to the calibration server and
check that rpcprof puts its cost where it belongs, growing linearly with the amount, and nowhere else.

Real server, real perf, real load (h2load C=1 S=100), like test_calibration.py, with burn_us=0 so the
base is small (~12 µs/req), short windows, every run in its own folder under pytest's tmp:

- base (extra_writes=0, pad_items=0) twice, the sweep's first run and its last (bench/perturb.sh: three
  times, first, middle, last), so that its spread measures the noise, drift of the shared machine included;
- extra_writes 2, 4 (bench/perturb.sh: 1, 2, 4): N sends of a 32-byte UDP datagram to a loopback sink
  per response. `send` µs/req must be linear in N (R² >= 0.95, positive slope: ~3-4 µs per write here) and the syscall
  count must grow by one write-family syscall (sendto) per extra write (slope within 10 % of 1);
- pad_items 1000, 3000 (bench/perturb.sh: 1000, 2000, 3000): the reply carries 10 x N more bytes
  (10-30 KB) of packed 10-byte varints, encoded by prost. protocol/protobuf µs/req must be linear in the payload bytes (R² >= 0.95,
  positive slope: ~6-7 ns per byte here, each varint byte is one put into tonic's buffer).

Not 8 extra writes: there the handler is slow enough that the server's own batching falls (measured: one
writev per ~23 responses against ~100 at the base, 45-70 at 2-4 extra writes) and tonic's per-request
HTTP/2 work grows with it (protocol +30 %, in two sweeps): a real second-order effect of the
perturbation, which the mechanism report shows as requests per write, not an attribution error.

Every other category must stay within its noise: its change across the knob's range, by its
least-squares line over every point (bases included, so that one window's drift moves a point, not the
line), within max(3 x its spread over the base repeats, 10 % of the perturbed category's growth;
35 % for the extra writes, whose kernel path measurably slows the HTTP/2 code around it: WRITES_SPILL),
except what must grow, asserted as what it is:
- with the payload, `send` grows: the kernel copies the larger reply into the TCP socket and, on
  loopback, the sender runs the client's receive too (send/tcp, send/loopback). It must grow linearly
  with the bytes too (positive slope), and by less per byte than protobuf does (measured: ~0.7 ns per
  byte against protobuf's ~6-7: the kernel copies whole buffers, prost puts the varints byte by byte);
- with the payload, h2 sends the reply in more DATA frames (16 KB each) and tonic's buffer grows:
  protocol/http2 and protocol/grpc must stay within the bound above measured against protobuf's growth.

Which µs/req: a category's share of the profile x the profile window's own CPU µs per request, i.e.
the CPU its samples stand for, per request served in that same window. report.py compare multiplies
the shares by the measured (unprofiled) window's CPU µs/req instead, the right figure for efficiency;
but on this shared 2-core VM the CPU per request of the same setting moves by up to ~15 % from one window
to the next, which puts the two windows' drift into each point: on the same runs the protobuf fit's R²
was 0.96-0.97 that way against 0.996-1.000 in-window. The attribution being tested is the profile's,
so the fits are in-window; bench/perturb.sh prints the compare-style fits beside them.

Counting: rpcprof learns the reply from its readiness probe and counts h2load's OK replies as DATA bytes
/ that reply's framed length, so the padded replies are counted by their own length. A test checks that
rpcprof's count is DATA bytes / the framed length the padding should give (computed here from main.rs's
encoding, independently), and that the bytes received are exactly h2load's completed requests times that
length (plus the partial replies of the <= 100 streams cut off at the end of the window).

A run whose profile window rpcprof flags PROFILE-REGIME (its req/s more than 10 % from the measured
window's: its shares describe another regime) is redone once. Not twice: in one sweep here extra_writes=2 was
flagged in all three of its runs (the profiler at 1957 Hz), so a third run cost its 10 s and changed nothing.

`python tests/live/test_perturbation.py --help` runs the same sweep with other windows and prints the figures
and fits (bench/perturb.sh). Takes 6 runs x ~11 s (bench/perturb.sh: 9 runs).
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import LinearFit, card_run, category_shares, linear_fit, port_is_free

ROOT = Path(__file__).resolve().parents[2]
SERVER = "calibration"
PORT = 30571                           # the first free one from here on (not conftest's 30151-30299)
STREAMS = 100                          # S, given to every run: streams in flight, cut off at the end of a window
TEST_WINDOWS = {"duration": 2, "warmup": 1, "profile_duration": 4, "syscall_duration": 2}
WRITES = (1, 2, 4)                     # bench/perturb.sh's sweep (and the fits' docstring above)
PAD_ITEMS = (1000, 2000, 3000)
BASE_REPEATS = 3
# the test's shorter sweep, 6 runs instead of 9 (bench/perturb.sh runs the whole one with longer windows):
# two points of each knob besides two bases (the first run and the last) still make each fit a line through
# three levels, and the bases' spread the noise the other categories are held to
TEST_WRITES = (2, 4)
TEST_PAD_ITEMS = (1000, 3000)
TEST_BASE_REPEATS = 2

LEVEL1 = ("app", "recv", "send", "protocol", "runtime", "other")
PROTOCOL_SUBS = ("protocol/http2", "protocol/hpack", "protocol/grpc", "protocol/glue", "protocol/other")
R2_MIN = 0.95


# --- settings and their figures --------------------------------------------------------------------

def varint_len(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


def pad_bytes(pad_items: int) -> int:
    """Bytes the padding adds to a reply: a field key, the length, 10 bytes per item (see main.rs)."""
    return 0 if pad_items == 0 else 1 + varint_len(10 * pad_items) + 10 * pad_items


def unpadded_reply_len() -> int:
    """The framed length of the expected helloworld reply, as rpcprof's h2load counting uses it."""
    from rpcprof.measure.scenario import get_scenario, grpc_frame
    return len(grpc_frame(get_scenario("helloworld").expected_reply_bytes()))


@dataclass(frozen=True)
class Setting:
    extra_writes: int = 0
    pad_items: int = 0

    @property
    def is_base(self) -> bool:
        return self.extra_writes == 0 and self.pad_items == 0

    @property
    def name(self) -> str:
        return f"w{self.extra_writes}-p{self.pad_items}"


def sweep_settings(writes=WRITES, pad_items=PAD_ITEMS, base_repeats=BASE_REPEATS) -> list[Setting]:
    """Run order: a base first, one after the write settings, one last (more if asked, spread between)."""
    base = Setting()
    rest = [Setting(extra_writes=w) for w in writes] + [Setting(pad_items=p) for p in pad_items]
    order = [base]
    for i, s in enumerate(rest):
        order.append(s)
        # bases spread evenly through the sweep, the last one at the end
        if base_repeats > 1 and (i + 1) % max(1, -(-len(rest) // (base_repeats - 1))) == 0:
            order.append(base)
    while sum(s.is_base for s in order) < base_repeats:
        order.append(base)
    return order


@dataclass
class Figures:
    """One run's per-request figures, as rpcprof measured them."""
    setting: Setting
    run_dir: Path
    # the profile window's, which begins after a lead on its connections: h2load's DATA bytes count from the
    # lead on, its requests in the timed window
    requests: int                 # rpcprof's count of OK replies
    succeeded: int                # h2load's completed requests
    data_bytes: int
    reply_len: int                # framed reply length the padding should give
    learned_len: int              # the framed length rpcprof learned from the server's replies to its probe
    lead_s: float                 # the profile window's lead
    cpu_us_per_req: float         # the measured (unprofiled) window: rpcprof's efficiency figure
    cpu_us_per_req_profiled: float   # the profile window's own
    req_per_s: float
    writes_per_req: float         # write-family syscalls (write, writev, sendto, sendmsg, sendmmsg)
    sendto_per_req: float
    syscalls_per_req: float
    # level-1 and level-2 categories, µs/req: share x the profile window's own CPU µs/req (what the tests fit)
    us: dict[str, float] = field(default_factory=dict)
    # the same shares x the measured window's CPU µs/req: what report.py compare prints
    reported: dict[str, float] = field(default_factory=dict)

    @property
    def payload_bytes(self) -> int:
        return pad_bytes(self.setting.pad_items)


def run_setting(setting: Setting, runs_dir: Path, label: str, windows: dict, port: int = PORT) -> Path:
    """One ./profile.sh run of the calibration server at setting; its run folder."""
    argv = [str(ROOT / "profile.sh"), "run", SERVER, "--param", "burn_us=0",
            "--param", f"extra_writes={setting.extra_writes}", "--param", f"pad_items={setting.pad_items}",
            "-d", str(windows["duration"]), "-w", str(windows["warmup"]),
            "--profile-duration", str(windows["profile_duration"]),
            "--syscall-duration", str(windows["syscall_duration"]), "--no-off-cpu",
            "--port", str(port), "--label", label, "--format", "json", "--runs-dir", str(runs_dir), "--rounds", "1",
            "-S", str(STREAMS), "--no-pictures", "--host-card", str(card_run())]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{setting.name}: profile.sh run failed:\n{proc.stderr[-2000:]}"
    return next(runs_dir.glob(f"*-{label}"))


def figures(run_dir: Path, setting: Setting) -> Figures:
    from rpcprof.rundir import PROFILE_SYSCALLS, load_run, window_file
    _, metrics = load_run(run_dir)
    m = metrics[SERVER]
    d = m["driver_figures"]
    reply_len = unpadded_reply_len() + pad_bytes(setting.pad_items)
    sc = m.get("syscalls") or {}
    by = sc.get("by_syscall_per_req") or {}
    cpu = m["cpu_us_per_req"]
    cpu_profiled = m["profile"]["cpu_us_per_req_profiled"]
    shares = {**category_shares(run_dir, SERVER, level=1), **category_shares(run_dir, SERVER, level=2)}
    # the measured window began on its lead's connections: counted as its 2xx, which its bytes cover
    assert m["lead_s"] > 0 and m["requests_ok"] == d["succeeded"] <= d["data_bytes"] // reply_len, (setting, d)
    h2load = (run_dir / SERVER / window_file(PROFILE_SYSCALLS, "load")).read_text()
    data_bytes = int(re.search(r"\((\d+)\) data", h2load).group(1))
    succeeded = int(re.search(r"(\d+) succeeded", h2load).group(1))
    return Figures(setting, run_dir, m["profile"]["requests_ok"], succeeded, data_bytes, reply_len,
                   m["reply"]["framed_len"], m["profile"]["lead_s"], cpu, cpu_profiled, m["req_per_s"], sc.get("writes_per_req") or 0, by.get("sendto", 0),
                   sc.get("per_req") or sc.get("named_per_req") or 0,
                   {c: v * cpu_profiled for c, v in shares.items()}, {c: v * cpu for c, v in shares.items()})


def run_sweep(runs_dir: Path, windows: dict, settings: list[Setting], port: int = PORT,
              progress=None) -> list[Figures]:
    out = []
    for i, s in enumerate(settings):
        if progress:
            progress(f"perturb: {i + 1}/{len(settings)} {s.name}")
        for attempt in range(1 + REGIME_RETRIES):
            run_dir = run_setting(s, runs_dir, f"perturb-{i:02d}-{s.name}-{attempt}", windows, port)
            if not profile_out_of_regime(run_dir):
                break
            if progress:
                progress(f"perturb: {s.name}: the profile window was out of the measured regime; again")
        out.append(figures(run_dir, s))
    return out


REGIME_RETRIES = 1


def profile_out_of_regime(run_dir: Path) -> bool:
    """rpcprof's own PROFILE-REGIME flag: the profile window's req/s (or writes per request) was not the
    measured window's, so its shares describe another regime (on this shared VM a window now and then
    runs 30-40 % slower). Such a run is redone, at most REGIME_RETRIES times; the last one is kept."""
    from rpcprof.analyze.regime import regime_flags
    from rpcprof.rundir import load_run
    m = load_run(run_dir)[1][SERVER]
    return any(f.startswith("PROFILE-REGIME") for f in regime_flags(m))


# --- what the tests check, also printed by the bench -----------------------------------------------

@dataclass
class Noise:
    """Per category: the base repeats' mean and spread (max - min), µs/req."""
    mean: dict[str, float]
    spread: dict[str, float]

    @classmethod
    def of(cls, bases: list[Figures]) -> "Noise":
        keys = set().union(*(b.us for b in bases))
        vals = {k: [b.us.get(k, 0.0) for b in bases] for k in keys}
        return cls({k: statistics.fmean(v) for k, v in vals.items()}, {k: max(v) - min(v) for k, v in vals.items()})

    def bound(self, category: str, growth: float, spill: float = 0.10) -> float:
        """How far a category not perturbed may move: 3 x its spread, or `spill` of the perturbed growth."""
        return max(3 * self.spread.get(category, 0.0), spill * abs(growth))

    def change(self, f: Figures, category: str) -> float:
        return f.us.get(category, 0.0) - self.mean.get(category, 0.0)


def fit(points: list[Figures], x, y) -> LinearFit:
    return linear_fit([x(f) for f in points], [y(f) for f in points])


def writes_points(figs: list[Figures]) -> list[Figures]:
    return [f for f in figs if f.setting.pad_items == 0]


def pad_points(figs: list[Figures]) -> list[Figures]:
    return [f for f in figs if f.setting.extra_writes == 0]


def report(figs: list[Figures]) -> str:
    """Per setting the per-category µs/req, then the noise and the fits."""
    cols = [*LEVEL1, "protocol/protobuf", "protocol/http2", "protocol/grpc", "send/syscall", "send/tcp",
            "send/loopback"]
    short = {c: c.replace("protocol/", "p/").replace("send/", "s/") for c in cols}
    lines = ["CPU µs per request: measured window (rpcprof's figure) and profile window; by category: share x the",
             "profile window's CPU µs/req (the in-window figures the tests fit)",
             f"{'setting':14} {'payload B':>9} {'req/s':>8} {'µs/req':>7} {'prof':>7} "
             + " ".join(f"{short[c]:>8}" for c in cols) + f" {'sysc/req':>8} {'writes/req':>10}"]
    for f in figs:
        lines.append(f"{f.setting.name:14} {f.payload_bytes:9d} {f.req_per_s:8.0f} {f.cpu_us_per_req:7.2f} "
                     f"{f.cpu_us_per_req_profiled:7.2f} " + " ".join(f"{f.us.get(c, 0.0):8.2f}" for c in cols)
                     + f" {f.syscalls_per_req:8.3f} {f.writes_per_req:10.3f}")
    bases = [f for f in figs if f.setting.is_base]
    noise = Noise.of(bases)
    lines.append(f"{'base spread':14} {'':9} {'':8} {'':7} {'':7} "
                 + " ".join(f"{noise.spread.get(c, 0.0):8.2f}" for c in cols)
                 + f"   ({len(bases)} base runs, max - min)")
    w, p = writes_points(figs), pad_points(figs)
    writes, payload = (lambda f: f.setting.extra_writes), (lambda f: f.payload_bytes)
    fits = [("send µs/req vs extra writes", w, writes, lambda f: f.us["send"]),
            ("  as reported (x measured window)", w, writes, lambda f: f.reported["send"]),
            ("write syscalls/req vs extra writes", w, writes, lambda f: f.writes_per_req),
            ("sendto/req vs extra writes", w, writes, lambda f: f.sendto_per_req),
            ("protocol/protobuf µs/req vs payload bytes", p, payload, lambda f: f.us["protocol/protobuf"]),
            ("  as reported (x measured window)", p, payload, lambda f: f.reported["protocol/protobuf"]),
            ("send µs/req vs payload bytes", p, payload, lambda f: f.us["send"]),
            ("app µs/req vs payload bytes", p, payload, lambda f: f.us["app"])]
    lines += ["", "least-squares fits (y in µs/req or per request)"]
    for title, pts, x, y in fits:
        if len({x(f) for f in pts}) >= 2:
            lines.append(f"{title:42} {fit(pts, x, y)}")
    return "\n".join(lines)


# --- the tests ---------------------------------------------------------------------------------------

def free_port(first: int = PORT) -> int:
    return next(p for p in range(first, first + 20) if port_is_free(p))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> list[Figures]:
    figs = run_sweep(tmp_path_factory.mktemp("runs"), TEST_WINDOWS, sweep_settings(TEST_WRITES, TEST_PAD_ITEMS, TEST_BASE_REPEATS),
                     free_port())
    print(report(figs))          # shown with -s, and with any failure (captured setup output)
    return figs


@pytest.fixture(scope="module")
def noise(sweep) -> Noise:
    return Noise.of([f for f in sweep if f.setting.is_base])


def describe(figs: list[Figures]) -> str:
    return "\n" + report(figs)


def test_send_cost_is_linear_in_the_extra_writes(sweep):
    line = fit(writes_points(sweep), lambda f: f.setting.extra_writes, lambda f: f.us["send"])
    assert line.slope > 0 and line.r2 >= R2_MIN, f"send vs extra writes: {line}{describe(sweep)}"


def test_every_extra_write_is_one_write_syscall(sweep):
    pts = writes_points(sweep)
    for per_req in (lambda f: f.writes_per_req, lambda f: f.sendto_per_req):
        line = fit(pts, lambda f: f.setting.extra_writes, per_req)
        assert line.slope == pytest.approx(1, rel=0.10), f"write syscalls vs extra writes: {line}{describe(sweep)}"


def trend(points: list[Figures], x, category: str) -> float:
    """How much a category changes across the knob's range by its least-squares line over every point (the
    base repeats included): a single window's drift moves one point, not the line."""
    xs = [x(f) for f in points]
    return fit(points, x, lambda f: f.us.get(category, 0.0)).slope * (max(xs) - min(xs))


def test_extra_writes_leave_the_other_categories_alone(sweep, noise):
    pts, x = writes_points(sweep), (lambda f: f.setting.extra_writes)
    growth = trend(pts, x, "send")
    for c in ("app", "recv", "protocol", "runtime", "other"):
        change = trend(pts, x, c)
        bound = noise.bound(c, growth, WRITES_SPILL)
        assert abs(change) <= bound, (
            f"{c} changed {change:+.2f} µs/req across the extra writes while send grew {growth:+.2f} "
            f"(bound {bound:.2f}){describe(sweep)}")


# Measured spill-over of the extra writes into the protocol work around them: +0.3 to +0.9 µs/req per
# extra write against send's +4.7 to +5.0 (6-18 %), steady in a sweep while the server's own batching
# stays the same (writes/req - N = 0.010-0.013): the kernel's UDP path evicts the HTTP/2 code's cache
# working set, a real cost the profile puts where it is paid. On a slower state of the host (2026-11-27,
# syscall 228 ns against the published host's 118) it measured 29 % and 30 % in two fresh-clone runs
# (protocol +5.81-5.82 µs/req against send's +19.6-19.9). The test holds it under 35 %.
WRITES_SPILL = 0.35


def test_protobuf_cost_is_linear_in_the_payload_bytes(sweep):
    line = fit(pad_points(sweep), lambda f: f.payload_bytes, lambda f: f.us["protocol/protobuf"])
    assert line.slope > 0 and line.r2 >= R2_MIN, f"protocol/protobuf vs payload bytes: {line}{describe(sweep)}"


def test_padded_replies_are_counted_by_their_own_length(sweep):
    """rpcprof learned each setting's padded reply from its probe, and counts the window's 2xx, which the
    DATA bytes (the lead's with them) cover at that length."""
    for f in sweep:
        assert f.learned_len == f.reply_len, f"{f.setting.name}: learned {f.learned_len} B, padded {f.reply_len} B"
        assert f.requests == f.succeeded <= f.data_bytes // f.reply_len, (
            f"{f.setting.name}: rpcprof counted {f.requests} replies of {f.succeeded} 2xx; DATA bytes / "
            f"{f.reply_len} B gives {f.data_bytes // f.reply_len}")


def test_padded_replies_reach_the_client_whole(sweep):
    """The profile window began after a lead on its connections, and every reply carried its padding: the DATA
    bytes hold the window's completed replies at the framed length, and more (the lead's)."""
    for f in sweep:
        assert f.lead_s > 0 and f.reply_len * f.succeeded < f.data_bytes, (
            f"{f.setting.name}: {f.data_bytes} DATA bytes for {f.succeeded} replies of {f.reply_len} bytes "
            f"after a {f.lead_s:g} s lead")


def test_payload_grows_send_less_than_protobuf(sweep):
    """The kernel's copy of the larger reply is send's, honestly: linear, and cheaper per byte than prost's."""
    pts = pad_points(sweep)
    send = fit(pts, lambda f: f.payload_bytes, lambda f: f.us["send"])
    protobuf = fit(pts, lambda f: f.payload_bytes, lambda f: f.us["protocol/protobuf"])
    assert 0 < send.slope < protobuf.slope, f"send {send}, protobuf {protobuf}{describe(sweep)}"


def test_payload_leaves_the_other_categories_alone(sweep, noise):
    pts, x = pad_points(sweep), (lambda f: f.payload_bytes)
    growth = trend(pts, x, "protocol/protobuf")
    for c in ("app", "recv", "runtime", "other", *PROTOCOL_SUBS):
        change = trend(pts, x, c)
        assert abs(change) <= noise.bound(c, growth), (
            f"{c} changed {change:+.2f} µs/req across the payloads while protocol/protobuf grew {growth:+.2f} "
            f"(bound {noise.bound(c, growth):.2f}){describe(sweep)}")


# --- bench/perturb.sh --------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/perturb.sh", description="The perturbation sweep of "
                                 "tests/live/test_perturbation.py with other windows: figures per setting and fits.")
    ap.add_argument("-d", "--duration", type=float, default=10, help="measured window [s] (default 10)")
    ap.add_argument("-w", "--warmup", type=float, default=2, help="warm-up [s] (default 2)")
    ap.add_argument("--profile-duration", type=float, default=8, help="profile window [s] (default 8)")
    ap.add_argument("--syscall-duration", type=float, default=4, help="syscall-count window [s] (default 4)")
    ap.add_argument("--writes", default=",".join(map(str, WRITES)),
                    help=f"extra_writes settings (default {','.join(map(str, WRITES))})")
    ap.add_argument("--pad-items", default=",".join(map(str, PAD_ITEMS)),
                    help="pad_items settings (default 1000,2000,3000)")
    ap.add_argument("--repeats", type=int, default=BASE_REPEATS, help="base runs (default 3, at least 2)")
    ap.add_argument("--port", type=int, default=PORT, help=f"first port to try (default {PORT})")
    ap.add_argument("--runs-dir", type=Path, help="keep the run folders here (default: a temporary folder, deleted)")
    args = ap.parse_args(argv)
    if args.repeats < 2:
        ap.error("--repeats must be at least 2: one base run has no spread")

    def ints(text: str) -> tuple[int, ...]:
        try:
            return tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            ap.error(f"expected comma-separated integers, got {text!r}")

    windows = {"duration": args.duration, "warmup": args.warmup, "profile_duration": args.profile_duration,
               "syscall_duration": args.syscall_duration}
    settings = sweep_settings(ints(args.writes), ints(args.pad_items), args.repeats)
    with tempfile.TemporaryDirectory(prefix="rpcprof-perturb-") as tmp:
        runs_dir = args.runs_dir or Path(tmp)
        runs_dir.mkdir(parents=True, exist_ok=True)
        figs = run_sweep(runs_dir, windows, settings, free_port(args.port),
                         progress=lambda msg: print(msg, file=sys.stderr, flush=True))
        print(report(figs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
