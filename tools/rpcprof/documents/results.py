"""docs/results.md from a sweep folder: the measured table, the explanation in numbers (CPU µs per
request by category, syscalls per request), and the published seed figures set beside them.

Every figure about this machine comes from the sweep's files; the seed figures are quoted from the
published benchmarks (documents/seed_figures.py says which setups).
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.analyze.categorize import Rules
from rpcprof.errors import UserError
from rpcprof.analyze.intervals import server_ratio
from rpcprof.analyze.rules_file import Groups
from rpcprof.analyze.stall import SPLIT
from rpcprof.report.compare import compare_rows, explanations, render_explanations
from rpcprof.report.sigdiff import gap_lines
from rpcprof.report.mechanism import describe
from rpcprof.documents.provenance import header, machine_text, stall_cause_lines, stall_causes
from rpcprof.documents.seed_figures import SEED_000_RATIOS, SEED_CLIENT_CPUS, SEED_RATIO_QUOTED
from rpcprof.documents.seed_gaps import GAP
from rpcprof.report.summary import ratio_text
from rpcprof.records import beside_busy, round_rows, rounds_asked
from rpcprof.report.sweep_table import render_sweep, sweep_rows
from rpcprof.rundir import load_sweep
from rpcprof.status import Status

RATIO_DEFINITION = ("The ratio, everywhere in this document: of two servers' requests per server CPU-second, the "
                    "geometric mean over the rounds of each round's ratio (the two servers were measured one after "
                    "the other in every round), with its 95 % t interval in brackets; the req/s per CPU column "
                    "shows each server's median round, so the ratio of two such medians can differ from it.")
HEADLINE_RULE = ("The cell explained here is chosen by a rule that favours reliability, never by the size of its "
                 "ratio: among the cells where neither server carries a flag (client-bound, latency-bound, "
                 "unsaturated, requests in flight, another regime in the profile or syscall window), the one whose "
                 "ratio has the narrowest 95 % interval; when every cell has a flag, the cells with the fewest "
                 "flags compete.")


def num(x, digits=1):
    """A figure with digits decimals and thousands separators; '-' for None."""
    return "-" if x is None else f"{x:,.{digits}f}"


def every_round_profiled(measured: dict) -> bool:
    """Whether every round of every server of every cell had a profile window (older sweeps profiled round 1 only)."""
    results = [m for _, metrics in measured.values() for m in metrics.values() if m.get("status") == Status.OK]
    return bool(results) and all(r.get("profile_samples") for m in results for r in round_rows(m) or [m])


def build_results(sweep_dir: Path, rules: Rules, generated_by: str, stall_runs: tuple = ()) -> str:
    """The markdown document; generated_by: the command that regenerates it, for its header; stall_runs: runs
    that measured again why a server stalled (stall_causes), said beside its STALLED cells."""
    manifest, measured = load_sweep(sweep_dir)
    p = manifest["parameters"]
    servers = p["servers"]
    rows = sweep_rows(sweep_dir, rules)
    figures = {(cell["connections"], cell["streams"], name): m for key, cell in manifest["cells"].items()
               for name, m in measured[key][1].items() if m.get("status") == Status.OK}
    cells = sorted({(r["connections"], r["streams"]) for r in rows})
    by = {(r["connections"], r["streams"], r["server"]): r for r in rows}
    first, second = (servers + [None, None])[:2]
    causes = stall_causes(list(stall_runs), p["scenario"])
    runs = sorted({(run, id(man)): (run, man) for run, man, _ in causes.values()}.values(), key=lambda x: str(x[0]))
    out = [*header(f"Results: {' vs '.join(servers)} on this machine class", generated_by,
                   [sweep_dir, *(r for r, _ in runs)], [manifest, *(man for _, man in runs)],
                   [[cell_manifest for cell_manifest, _ in measured.values()], *([] for _ in runs)]),
           "## Machine and parameters", "", f"- {machine_text(manifest)}",
           f"- server pinned to CPU {p['server_cpus']}, load ({p['driver']}) on "
           + (f"CPU {p['load_cpus']}" if p['load_cpus'] else "the other CPUs"),
           f"- {p['warmup']:g} s warm-up, {p['duration']:g} s measured window with no profiler attached, "
           + (f"{rounds_asked(p)} round(s) per cell, the servers measured in turn and restarted each time (the median round "
            "is shown, min-max beside it; ratios are geometric means of adjacent pairs with a 95 % t interval); "
            + ("a profile window per server in every round, its syscalls counted by name on the server's CPU in "
               "that window" if every_round_profiled(measured) else
               "a syscall-count window and a profile window per server in the first round")
            if all(r.get("rounds_interleaved", True) for r in rows) else
            f"{rounds_asked(p)} repeat(s) per server and cell, one server's repeats after the other (this sweep predates "
            "interleaved rounds: the median round is shown with its min-max; ratios are of the medians, with no "
            "paired interval, and may hold the machine's drift); a syscall-count window and a profile window per "
            "server and cell"),
           f"- scenario {p['scenario']}; tools: " + ", ".join(f"{k} {v}" for k, v in sorted(manifest['tools'].items())),
           "", "## The table", "",
           f"Seed 000's layout. `^N.N` is the ratio, {second} over {first}. {RATIO_DEFINITION} CPU µs per request by category = category share of the profile × CPU µs "
           "per request of the unprofiled window.", "",
           render_sweep(sweep_dir, rules, "markdown").rstrip(), ""]
    if second:
        out += ["## Set beside the published figures", "",
                f"| C | S | S/C | seed 000 ^ | this machine ^ | here ÷ seed | 95 % interval (or range) | {first} client-bound | "
                f"{second} client-bound | {second} syscalls/req | {first} syscalls/req | why |",
                "|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|---|"]
        for c, s in cells:
            a, b = by.get((c, s, first)), by.get((c, s, second))
            if not a or not b:
                continue
            spread, i = "", b.get("cell_interval")
            if i and i["low"]:
                spread = (f"{ratio_text(i['low'])}-{ratio_text(i['high'])} ({i['n']} pairs)"
                          + " not significant" * (i["significant"] is False))
            elif b["ratio"] and a.get("spread_req_per_cpu_s") and b.get("spread_req_per_cpu_s"):
                sa, sb = a["spread_req_per_cpu_s"], b["spread_req_per_cpu_s"]
                spread = f"{sb[0] / sa[1]:.1f}-{sb[1] / sa[0]:.1f} (min-max, sequential measurements)"
            seed = SEED_000_RATIOS.get((c, s))
            factor = b["ratio"] / seed if b["ratio"] and seed else None
            out.append(f"| {c} | {s} | {s // c} | {num(seed)} | {num(b['ratio'])} | {num(factor, 2)} | {spread} | "
                       f"{'yes' if a.get('client_bound') else 'no'} | {'yes' if b.get('client_bound') else 'no'} | "
                       f"{num(b.get('syscalls_per_req'), 3)} | {num(a.get('syscalls_per_req'), 3)} | "
                       f"{cell_gap_reason(first, second, a, b, factor, len(p.get('load_cpus') or []) or 1, causes)} |")
        out += ["", *explain(cells, by, first, second, rules, len(p.get("load_cpus") or []) or None, causes), ""]
        out += guess_by_cell(cells, by, servers, rules, figures)
        out += mechanism_by_cell(sweep_dir, rules, manifest, measured)
    return "\n".join(out) + "\n"


def cell_gap_reason(first: str, second: str, a: dict, b: dict, factor: float | None, client_cpus: int,
                    causes: dict) -> str:
    """Why a cell's ratio is more than GAP away from seed 000's, from the cell's own figures: the flags that
    void the ratio (a stall with its cause where a run measured it: stall_causes), how many requests each
    server answered per write, what set the pace (a client of client_cpus CPUs, seed 000's of
    SEED_CLIENT_CPUS) and the requests in flight on each connection."""
    flags = [f"{srv} {flag}" + (f" ({SPLIT}: below)" if flag == "STALLED" and srv in causes else "")
             for srv, r in ((first, a), (second, b)) for flag in ("STALLED", "TOO-SHORT")
             if r.get(flag.lower().replace("-", "_"))]
    if flags:
        return "no ratio: " + ", ".join(flags) if factor is None else ", ".join(flags)
    if factor is None or abs(factor - 1) <= GAP:
        return ""
    per_conn = b["streams"] // b["connections"]
    per_write = [f"{srv} once per {1 / r['writes_per_req']:.1f}"
                 + (" (every request in flight on a connection)" if abs(r["writes_per_req"] * per_conn - 1) <= GAP else "")
                 for srv, r in ((second, b), (first, a)) if r.get("writes_per_req")]
    bound = [srv for srv, r in ((first, a), (second, b)) if r.get("client_bound")]
    return ("; ".join(filter(None, [
        f"requests per write: {', '.join(per_write)}" if per_write else "",
        f"{per_conn:,} in flight per connection from a client of {client_cpus} CPU"
        f"{'s' * (client_cpus != 1)} at {b.get('client_cpu_pct') or 0:.0f} % ({SEED_CLIENT_CPUS} in seed 000)",
        f"the client set the pace of {', '.join(bound)}" if bound else ""])))


def mechanism_by_cell(sweep_dir: Path, rules: Rules, manifest: dict, measured: dict) -> list[str]:
    """Per cell, `report.py compare --level 2`'s explanation: the categories that carry the gap to the
    first server and the kernel figures that differ (manifest, measured: the sweep's, load_sweep)."""
    out = ["", "## The gap by mechanism, per cell", "",
           ("From every round of each cell: level-2 CPU µs per request (the mean over rounds of each round's "
            "shares × its unprofiled CPU per request) and the kernel's per-request figures of the profile windows"
            if every_round_profiled(measured) else
            "From each cell's first round: level-2 CPU µs per request and the kernel's per-request figures of the "
            "syscall window") +
           " (`report.py compare CELL --level 2 --format json` names the figure behind each number).", ""]
    for key, cell in manifest["cells"].items():
        run_dir = sweep_dir / cell["run"]
        out += [f"### C={cell['connections']} S={cell['streams']}", ""]
        try:
            explained = explanations(run_dir, rules)
        except UserError as e:
            out += [f"No explanation: {e}", ""]
            continue
        out += [render_explanations(explained, "markdown").rstrip(), ""]
        out += [*gap_lines(*compare_rows(run_dir, rules)[:2]), ""]
    return out


def _parts(cats) -> str:
    return " + ".join(cats)


def guess_by_cell(cells, by, servers: list[str], rules: Rules, figures: dict) -> list[str]:
    """Seed 000's guess (the faster server wins by handling more requests per syscall) tested in every
    cell, against each other server: syscalls per request, and how much of the per-request CPU difference
    lies in recv + send versus runtime + protocol (category µs per request, other server minus second)."""
    second = servers[1]
    others = [s for s in servers if s != second]
    socket, above = rules.groups.socket, rules.groups.above_socket
    out = ["## Seed 000's guess, cell by cell", "",
           f"Seed 000's author guessed that {second}'s advantage comes from handling more requests per syscall. "
           f"For each cell and each other server X: {second}'s req/s per CPU over X's, syscalls per request, and "
           f"the CPU µs per request X spends more than {second}, split into {_parts(socket)} (the syscall path and "
           f"the kernel below it) and {_parts(above)} (the work above the socket). The two parts and "
           f"{_parts(c for c in rules.all_categories if c not in socket + above)} add up to the difference.", "",
           f"| C | S | X | ^ {second} / X | syscalls/req X | syscalls/req {second} | Δ CPU µs/req (X − {second}) | "
           f"{_parts(socket)} | {_parts(above)} | {_parts(socket)} share of Δ |",
           "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    shares: dict[str, list[float]] = {x: [] for x in others}
    for c, s in cells:
        b = by.get((c, s, second))
        for x in others:
            a = by.get((c, s, x))
            if not a or not b or not a.get("req_per_cpu_s") or not b.get("req_per_cpu_s") or a.get("stalled") or b.get("stalled"):
                continue        # a stalled window's figures are a burst and a silence, not a pace
            interval = server_ratio(figures[(c, s, x)], figures[(c, s, second)])
            diff = a["cpu_us_per_req"] - b["cpu_us_per_req"]
            io, work = _delta(a, b, socket), _delta(a, b, above)
            share = f"{_pct(io, diff)} %" if io is not None and diff > 0 else "-"
            if io is not None and diff > 0:
                shares[x].append(io / diff)
            out.append(f"| {c} | {s} | {x} | {interval.text()[1:] if interval else '-'} | "
                       f"{num(a.get('syscalls_per_req'), 3)} | "
                       f"{num(b.get('syscalls_per_req'), 3)} | {diff:.2f} | {num(io, 2)} | {num(work, 2)} | {share} |")
    out.append("")
    for x, vals in shares.items():
        if vals:
            out.append(f"- {x}: {_parts(socket)} carry {round(100 * min(vals)) + 0} % to {round(100 * max(vals)) + 0} % of "
                       f"the per-request difference across {len(vals)} cells (median {round(100 * sorted(vals)[len(vals) // 2]) + 0} %); "
                       "the rest is work above the socket.")
    return out + [""]


def _sum(row: dict, cats: tuple[str, ...]) -> float | None:
    vals = [row.get(f"{c}_us") for c in cats]
    return None if any(v is None for v in vals) else sum(vals)


def _delta(a: dict, b: dict, cats: tuple[str, ...]) -> float | None:
    """a's CPU µs per request in cats minus b's (None where a category has no figure)."""
    x, y = _sum(a, cats), _sum(b, cats)
    return None if None in (x, y) else x - y


def io_vs_work(first: str, second: str, a0: dict, b0: dict, a1: dict, b1: dict, groups: Groups) -> str:
    """CPU µs/req in recv + send vs runtime + protocol (groups socket, above_socket) at a C's first and last S."""
    socket, above = groups.socket, groups.above_socket
    vals = [_sum(r, cats) for cats in (socket, above) for r in (a0, a1, b0, b1)]
    if any(v is None for v in vals):
        return ""
    a_io0, a_io1, b_io0, b_io1, a_w0, a_w1, b_w0, b_w1 = vals
    return (f" CPU µs per request in {_parts(socket)}: {first} {a_io0:.2f} → {a_io1:.2f}, {second} {b_io0:.2f} → "
            f"{b_io1:.2f}; in {_parts(above)}: {first} {a_w0:.2f} → {a_w1:.2f}, {second} {b_w0:.2f} → {b_w1:.2f}.")


def _pct(part: float, whole: float) -> str:
    """A whole percentage, with no '-0' for a tiny negative part."""
    return f"{round(100 * part / whole) + 0:d}"


def flags_of(row: dict) -> list[str]:
    """A measured row's flags: what makes its figures describe something else than the server's capacity."""
    named = [k.upper().replace("_", "-") for k in ("stalled", "too_short", "client_bound", "latency_bound", "unsaturated",
                                                   "in_flight_flag") if row.get(k)]
    return named + list(row.get("regime_flags") or []) + ["BUSY-HOST"] * beside_busy(row)


def headline_cell(pairs: list) -> tuple:
    """HEADLINE_RULE: the pair (c, s, a, b) with the fewest flags on both rows, then the narrowest interval
    of its ratio (a cell without one comes last)."""
    def key(pair):
        c, s, a, b = pair
        i = b.get("cell_interval") or {}
        width = (i["high"] / i["low"]) if i.get("low") else float("inf")
        return (len(flags_of(a)) + len(flags_of(b)), width, c, s)
    return min(pairs, key=key)


def explain(cells, by, first: str, second: str, rules: Rules, client_cpus: int | None, causes: dict) -> list[str]:
    """Sentences computed from the measured rows: where the per-request difference comes from, how
    the ratio and syscalls per request move with S/C, and how that compares with the seeds; causes: the
    runs that measured why a server stalled (stall_causes)."""
    lines = ["## The explanation, in numbers", ""]
    pairs = [(c, s, by[(c, s, first)], by[(c, s, second)]) for c, s in cells
             if (c, s, first) in by and (c, s, second) in by and by[(c, s, second)].get("ratio")]
    stalled = [(srv, c, s, r) for c, s in cells for srv in (first, second)
               if (r := by.get((c, s, srv)) or {}).get("stalled")]
    stalls = [f"{srv} at C={c} S={s}: {describe(r['stalled'], c, s)}." for srv, c, s, r in stalled]
    stalls += stall_cause_lines(causes, {srv for srv, *_ in stalled})
    if not pairs:
        return lines + ["No cell measured both servers."] + ([""] + [f"- {x}" for x in stalls] if stalls else [])
    lo, hi = (pick(pairs, key=lambda x: x[3]["ratio"]) for pick in (min, max))
    lines.append(f"- Across the {len(pairs)} cells, {second} serves {lo[3]['ratio']:.1f}x (C={lo[0]} S={lo[1]}) to "
                 f"{hi[3]['ratio']:.1f}x (C={hi[0]} S={hi[1]}) the requests per server CPU-second of {first}; "
                 f"seed 000 reported 1.3x to 11x, seed 001 {SEED_RATIO_QUOTED}x.")
    for c in sorted({c for c, *_ in pairs}):
        row = [(s, a, b) for cc, s, a, b in pairs if cc == c]
        if len(row) >= 2:
            (s0, a0, b0), (s1, a1, b1) = row[0], row[-1]
            trend = "grows" if b1["ratio"] > b0["ratio"] else "does not grow"
            seed = [SEED_000_RATIOS.get((c, s)) for s in (s0, s1)]
            seed_txt = (f"; seed 000: ^{seed[0]} to ^{seed[1]}" if all(seed) else "")
            lines.append(f"- At C={c}, the ratio {trend} from ^{b0['ratio']:.1f} (S={s0}) to ^{b1['ratio']:.1f} "
                         f"(S={s1}){seed_txt}. Syscalls per request: {second} {num(b0.get('syscalls_per_req'), 3)} → "
                         f"{num(b1.get('syscalls_per_req'), 3)}, {first} {num(a0.get('syscalls_per_req'), 3)} → "
                         f"{num(a1.get('syscalls_per_req'), 3)}." + io_vs_work(first, second, a0, b0, a1, b1, rules.groups))
    lines.append(f"- Seed 001's setup (ghz, 1 connection, 50 requests in flight: {SEED_RATIO_QUOTED}x) is not a cell of this "
                 "table: `report.py seeds` measures it on its own (docs/seeds.md).")
    c, s, a, b = headline_cell(pairs)
    i = b.get("cell_interval") or {}
    lines.append(f"- {HEADLINE_RULE} Here: C={c} S={s}, ^{b['ratio']:.1f}"
                 + (f" [{ratio_text(i['low'])}-{ratio_text(i['high'])}]" if i.get("low") else " (no interval)")
                 + (f", flags: {', '.join(flags_of(a) + flags_of(b))}." if flags_of(a) + flags_of(b) else ", no flag."))
    cats = rules.all_categories
    socket, above = rules.groups.socket, rules.groups.above_socket
    if all(a.get(f"{k}_us") is not None and b.get(f"{k}_us") is not None for k in cats):
        deltas = sorted(((a[f"{k}_us"] - b[f"{k}_us"], k) for k in cats), reverse=True)
        total = a["cpu_us_per_req"] - b["cpu_us_per_req"]
        parts = ", ".join(f"{k} {d:+.2f} µs" for d, k in deltas if abs(d) >= 0.005)
        lines.append(f"- Where the difference comes from, at C={c} S={s}: {first} spends {a['cpu_us_per_req']:.2f} "
                     f"CPU µs per request, {second} {b['cpu_us_per_req']:.2f}; the {total:.2f} µs difference is, by "
                     f"category ({first} minus {second}): {parts}.")
    lines += cell_flags(pairs, first, second, client_cpus)
    if stalls:
        lines.append("- Stalled, so no ratio in their cells (a longer window adds only silence): " + " ".join(stalls))
    io, work = _delta(a, b, socket), _delta(a, b, above)
    if None not in (io, work) and a["cpu_us_per_req"] > b["cpu_us_per_req"]:
        diff = a["cpu_us_per_req"] - b["cpu_us_per_req"]
        lines.append(
            f"- Seed 000's author guessed that {second}'s advantage comes from handling more requests per syscall as "
            f"streams per connection grow. Measured at C={c} S={s}: syscalls per request are {first} "
            f"{num(a.get('syscalls_per_req'), 3)} and {second} {num(b.get('syscalls_per_req'), 3)}; {_parts(socket)} "
            f"account for {_pct(io, diff)} % of the per-request difference and {_parts(above)} "
            f"for {_pct(work, diff)} %." + batching(first, second, a, b))
    return lines


def cell_flags(pairs, first: str, second: str, client_cpus: int | None) -> list[str]:
    """The explanation's sentences on flagged cells: client-bound, latency-bound, waits, in flight, unsaturated."""
    lines = []
    bound = [f"C={c} S={s}" for c, s, a, b in pairs if b.get("client_bound")]
    if bound:
        least = min(s / c for c, s, a, b in pairs if b.get("client_bound"))     # streams per connection
        free = [s / c for c, s, a, b in pairs if not b.get("client_bound")]
        most = (f" Those are the cells with the most streams per connection (S/C ≥ {least:g})."
                if free and least > max(free) else "")
        cores = (f" The load generator had {client_cpus} core{'s' if client_cpus > 1 else ''} here; seed 000 gave "
                 "it 12." if client_cpus else "")
        lines.append(f"- {second}'s load generator was the bottleneck (≥ 90 % of its CPU) in {', '.join(bound)}: "
                     f"its req/s there understates it; req/s per CPU still holds.{cores}{most}")
    sides = [(srv, r, c, s) for c, s, a, b in pairs for srv, r in ((first, a), (second, b))]
    lat = [f"{srv} at C={c} S={s}" for srv, r, c, s in sides if r.get("latency_bound")]
    waited = [f"{srv} at C={c} S={s}: {verdict}" for srv, r, c, s in sides
              for verdict in ((r.get("offcpu") or {}).get(k) for k in ("verdict", "contention")) if verdict]
    deep = [f"{srv} at C={c} S={s} ({100 * r['in_flight_share']:.0f} %)"
            for srv, r, c, s in sides if r.get("in_flight_flag")]
    unsat = [f"{srv} at C={c} S={s} ({100 * r['server_cpu_share']:.0f} % / {100 * r['client_cpu_share']:.0f} %)"
             for srv, r, c, s in sides if r.get("unsaturated")]
    return lines + [sentence for found, sentence in (
        (lat, f"- Latency-bound (neither side busy): {', '.join(lat)}."),
        (waited, "- Where the threads waited, from the off-CPU windows of those cells: " + " ".join(waited)),
        (deep, f"- Requests still in flight when the window ended, as a share of those counted, above 2 %: "
               f"{', '.join(deep)}. They were partly served but not counted, so CPU per request there may be "
               "overstated by up to that share; the ratio by up to the difference of the two."),
        (unsat, f"- Unsaturated (server below 90 % of its CPU, client not the bottleneck; server / client "
                f"shares): {', '.join(unsat)}. Their req/s is not the server's capacity; CPU per request holds."),
    ) if found]


def batching(first: str, second: str, a: dict, b: dict) -> str:
    """What the servers' syscalls per request say of the guess: alike (within 25 %) or how many times more one makes."""
    x, y = a.get("syscalls_per_req"), b.get("syscalls_per_req")
    if not x or not y:
        return ""
    if max(x, y) / min(x, y) <= 1.25:
        return (" Both make about as many syscalls per request (within 25 %), so what separates them is the "
                "per-request work above the socket.")
    more, fewer = (first, second) if x > y else (second, first)
    return f" {more} makes {max(x, y) / min(x, y):.1f}x the syscalls per request of {fewer}."
