"""docs/seeds.md from a run folder of seed 001's setup: rpcprof's figures set beside the seed's.

Seed 001 ran ghz against tonic's helloworld example on tokio's multi-thread runtime with one worker and
pajamax's helloworld example, 1 connection, 50 requests in flight, and read figures off flame graphs.
Every figure here about this machine is computed from the run folder (metrics.json, profile.folded);
the seed's figures are quoted. Where a figure differs, the reasons given are the run's own flags and
figures (client-bound, latency-bound, the client's CPU, profiling overhead), never typed-in prose.

    ./profile.sh run rust_tonic_mt rust_pajamax rust_tonic_st --driver ghz -C 1 -S 50 --label seed-001
    ./report.py seeds flamegraphs/<...-seed-001> -o docs/seeds.md
"""
from __future__ import annotations

from collections import Counter
from itertools import combinations
from pathlib import Path

from rpcprof.analyze.breakdowns import every_round
from rpcprof.analyze.categorize import Rules, categorize, group_of
from rpcprof.analyze.frames import frame_share
from rpcprof.analyze.patterns import UserRegex
from rpcprof.analyze.intervals import profiled_ratio, server_ratio
from rpcprof.analyze.rules_file import APP
from rpcprof.errors import UserError
from rpcprof.report.compare import round_profiles, ruler_check, ruler_rows
from rpcprof.documents.provenance import header
from rpcprof.documents.results import RATIO_DEFINITION, num
from rpcprof.documents.seed_gaps import GAP, gap_section, why_lines
from rpcprof.documents.seed_figures import (LEAF_SWITCH, RULER, SEED_002, SEED_002_CASES, SEED_FRAMES,
                                         SEED_RATIO, SEED_RATIO_QUOTED, SEED_RUN, TEARDOWN, seed_002_cpu_ratio)
from rpcprof.report.summary import notes_for, syscalls_per_request
from rpcprof.rundir import load_run, profile_folded
from rpcprof.status import Status


def roles(servers: list[str]) -> dict[str, list[str]]:
    """Which measured servers stand for the seed's tonic and pajamax, by name."""
    return {"tonic": [s for s in servers if "tonic" in s], "pajamax": [s for s in servers if "pajamax" in s]}


def leaf_share(stacks, regex: str) -> float:
    pattern = UserRegex(regex, "leaf")
    total = sum(w for _, w in stacks)
    hit = sum(w for frames, w in stacks if frames and pattern.search(frames[-1]))
    return hit / total if total else 0.0


def frames_section(rules: Rules, metrics: dict, by_role: dict, stacks: dict, sampled_event: str | None) -> list[str]:
    """The flame graphs' frames beside seed 001's, and the same servers by category."""
    shown = by_role_list(by_role, stacks)
    out = ["", "## The flame graphs' frames", "",
            "Share of samples whose stack holds the frame (a flame graph box's width; ± one binomial standard "
            "error from the sample count).", "",
            "| seed's server | frame | seed 001 | " + " | ".join(shown) + " | seed 001's reading |",
            "|---|---|---:|" + "---:|" * len(shown) + "---|"]
    for f in SEED_FRAMES:
        shares = {s: frame_share(stacks[s], UserRegex(f.regex, f.label)) for s in shown if s in by_role[f.role]}
        cells = [f"{100 * shares[s].share:.2f} ± {100 * shares[s].stderr:.2f} %" if s in shares else "" for s in shown]
        out.append(f"| {f.role} | `{f.label}` | {f.seed_pct:.2f} % | " + " | ".join(cells) + f" | {f.what} |")
    out += ["", "The same servers by category (CPU share; `report.py compare` gives µs per request):", "",
            "| server | " + " | ".join(rules.all_categories) + " | samples | switch leaf |",
            "|---|" + "---:|" * (len(rules.all_categories) + 2)]
    switch = {s: leaf_share(stacks[s], LEAF_SWITCH) for s in shown}
    for s in shown:
        b = categorize(stacks[s], rules.with_app(metrics[s].get("app"), f"{s}'s app pattern"))
        out.append(f"| {s} | " + " | ".join(f"{100 * b.share(c):.1f} %" for c in rules.all_categories)
                   + f" | {b.samples:,} | {100 * switch[s]:.1f} % |")
    return out + ["", *switch_leaf_note(sampled_event, switch), ""]


def build_seeds(run_dir: Path, rules: Rules, also: list[Path], seed_002: list[Path], generated_by: str) -> str:
    """The markdown document: seed 001's figures beside a run of its setup, other setups (--also), and
    seed 002's section from runs of its stream counts at one server thread (seed_002)."""
    run_dir = Path(run_dir)
    manifest, metrics = load_run(run_dir)
    p = manifest["parameters"]
    servers = [s for s in p["servers"] if (metrics.get(s) or {}).get("status") == Status.OK]
    by_role = roles(servers)
    if not by_role["tonic"] or not by_role["pajamax"]:
        raise UserError(f"{run_dir}: seed 001 compares tonic and pajamax; this run measured {', '.join(servers) or 'none'} "
                        "successfully (run rust_tonic_mt rust_pajamax)")
    # every round's samples, as the ruler takes them (a run of one round: its profile)
    stacks = {s: every_round(round_profiles(run_dir, s, metrics[s])) for s in servers
              if profile_folded(run_dir, s).exists()}
    sources = [run_dir, *map(Path, also), *map(Path, seed_002)]
    out = [
        *header("Seed 001 reproduced: tonic vs pajamax under ghz, 1 connection, 50 in flight",
                generated_by, sources, [load_run(f)[0] for f in sources]),
        "Seed 001's figures are quoted from it; every other figure comes from the run folders above.", "",
        f"Setup here: {p['driver']} C={p['connections']} S={p['streams']}, {p['warmup']:g} s warm-up, "
        f"{p['duration']:g} s measured with no profiler attached, then a profile window with the same load; "
        f"server on CPU {p['server_cpus']}, load on CPU {p['load_cpus']}; scenario {p['scenario']}; "
        f"{manifest['machine'].get('cpu_model')}, kernel {manifest['machine'].get('kernel')}; "
        f"sampled event {manifest.get('sampled_event') or '-'}. Seed 001: ghz --cpus 12, 1 connection, "
        "50 concurrent requests, 1 minute, server on 1 CPU, AMD EPYC 9754.", "",
        "## The run", "",
        "| server | seed 001's | req/s | server CPU | client CPU | req/s per CPU | CPU µs/req | syscalls/req | flags |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    out += [f"| seed 001 {role} | | {num(r, 0)} | {s:.0f} % | {c:.0f} % | {num(r / (s / 100), 0)} | "
            f"{1e6 * (s / 100) / r:.2f} | - | |" for role, (c, s, r) in SEED_RUN.items()]
    for s in servers:
        m = metrics[s]
        role = "tonic" if s in by_role["tonic"] else "pajamax" if s in by_role["pajamax"] else ""
        out.append(f"| {s} | {role} | {num(m['req_per_s'], 0)} | {100 * m['server_cpu_cores']:.0f} % | "
                   f"{100 * m['client_cpu_cores']:.0f} % | {num(m['req_per_cpu_s'], 0)} | {m['cpu_us_per_req']:.2f} | "
                   f"{num(syscalls_per_request(m.get('syscalls')), 3)} | {notes_for(m) or '-'} |")
    pj = by_role["pajamax"][0]
    out += ["", "## The ratio", "",
            f"Seed 001 prints (65,135 / 15 %) / (41,125 / 95 %) = **{SEED_RATIO_QUOTED}x**; its own figures give "
            f"{SEED_RATIO:.2f}x. Here, {pj}'s requests per server CPU-second over each tonic build's. {RATIO_DEFINITION}", ""]
    for t in by_role["tonic"]:
        interval = server_ratio(metrics[t], metrics[pj])
        text = interval.text() if interval else "- (no round measured both)"
        out.append(f"- over {t}: **{text}**" + (f" ({interval.n} round{'s' if interval.n != 1 else ''})" if interval else ""))
    out += ["", "What about the setup differs, from the run's own figures:", ""]
    for s in servers:
        role = "tonic" if s in by_role["tonic"] else "pajamax"
        out += [f"- {line}" for line in why_lines(s, metrics[s], role, p.get("streams"), len(p.get("load_cpus") or []) or None)]
    tonic = by_role["tonic"][0]
    sends = {s: categorize(stacks[s], rules).share(rules.groups.writes) for s in (tonic, pj) if s in stacks}
    if len(sends) == 2:
        out += ["", *gap_section(run_dir, rules, metrics, manifest, tonic, pj, sends)]
    out += frames_section(rules, metrics, by_role, stacks, manifest.get("sampled_event"))
    out += ruler_section(run_dir, metrics, by_role, stacks)
    out += app_section(rules, metrics, by_role, stacks)
    if also:
        out += other_setups_section([run_dir, *map(Path, also)])
    if seed_002:
        out += seed_002_section(list(map(Path, seed_002)))
    return "\n".join(out) + "\n"


def switch_leaf_note(event: str | None, shares: dict[str, float]) -> list[str]:
    """What the `switch leaf` column means for the sampled event: with cpu-clock (no hardware PMU event), a context
    switch's irq-off time is charged to finish_task_switch; the server with the most such samples is named."""
    if event != "cpu-clock":
        return [f"`switch leaf`: samples whose leaf is `finish_task_switch` (sampled event {event or 'unknown'})."]
    top = max(shares, key=shares.get) if shares else None
    out = ["`switch leaf`: samples whose leaf is `finish_task_switch`. perf sampled `cpu-clock` here (no hardware "
           "PMU event was available), and time spent with interrupts off during a context switch is charged there "
           "when they come back on."]
    if top and shares[top] >= 0.01:
        out[0] += (f" {top} has the most ({100 * shares[top]:.1f} %): a thread that blocks in a read pays a switch "
                   "per read, and those samples sit under its recv frames.")
    return out


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None for fewer than 3 points or a constant side."""
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    from scipy.stats import spearmanr     # imported here, for --also's section only (scipy.stats takes seconds)
    return float(spearmanr(xs, ys).statistic)


def other_setups_section(runs: list[Path]) -> list[str]:
    """The same servers under other loads (--also): their figures, and the ruler's µs per request against syscalls
    per request: does the same code cost more per request when more syscalls separate one handler from the next?"""
    out = ["## The same servers in other setups", "",
           "Other runs given to `report.py seeds --also`, the run above first. The ruler's µs per request "
           "is its share of each profile times the unprofiled CPU per request.", "",
           "| run | driver | C | S | server | req/s | server CPU | client CPU | CPU µs/req | syscalls/req | "
           "ruler µs/req | flags |",
           "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    points = []
    for run in runs:
        manifest, metrics = load_run(run)
        p = manifest["parameters"]
        ruler = {r["server"]: r for r in ruler_rows(run, RULER)[0]}
        for s in (s for s in p["servers"] if (metrics.get(s) or {}).get("status") == Status.OK):
            m, r = metrics[s], ruler.get(s)
            sc = (m.get("syscalls") or {}).get("per_req")
            us = f"{r['us_per_req']:.3f} ± {r['us_per_req_err']:.3f}" if r and r["samples"] else "-"
            if r and r["samples"] and sc is not None:
                points.append((sc, r["us_per_req"], s, run.name))
            out.append(f"| {run.name} | {p['driver']} | {p['connections']} | {p['streams']} | {s} | "
                       f"{num(m['req_per_s'], 0)} | {100 * m['server_cpu_cores']:.0f} % | {100 * m['client_cpu_cores']:.0f} % | "
                       f"{m['cpu_us_per_req']:.2f} | {num(sc, 3)} | {us} | {notes_for(m) or '-'} |")
    out.append("")
    rho = spearman([x for x, *_ in points], [y for _, y, *_ in points])
    if rho is not None:
        lo, hi = min(points, key=lambda t: t[1]), max(points, key=lambda t: t[1])
        out += [f"- Over {len(points)} (server, setup) pairs, the ruler's µs per request and syscalls per request "
                f"have a rank correlation of {rho:+.2f}. Cheapest: {lo[2]} in {lo[3]} ({lo[1]:.3f} µs/req at "
                f"{lo[0]:.3f} syscalls/req); dearest: {hi[2]} in {hi[3]} ({hi[1]:.3f} µs/req at {hi[0]:.3f})."
                + correlation_reading(rho, len(points)), ""]
    return out


def correlation_reading(rho: float, n: int) -> str:
    """A rank correlation read: a tendency only when it is strong (|rho| >= 0.5), its direction from its sign."""
    if abs(rho) < 0.5:
        return " No clear tendency: the same instructions cost about the same per request whatever the syscalls."
    more = "more" if rho > 0 else "less"
    return (f" The same instructions cost {more} per request where more syscalls come between one request's handler "
            "and the next.")


def by_role_list(by_role: dict, stacks: dict) -> list[str]:
    return [s for s in by_role["tonic"] + by_role["pajamax"] if s in stacks]


def ruler_section(run_dir: Path, metrics: dict, by_role: dict, stacks: dict) -> list[str]:
    rows, _ = ruler_rows(run_dir, RULER, keep_shares=True)
    out = ["## The ruler", "",
           f"Seed 001 found `{RULER}` (the handler's `format!`) at 0.31 % of tonic and 2.90 % of pajamax: "
           f"9.4x, close to its measured {SEED_RATIO_QUOTED}x ({SEED_RATIO:.1f}x from its own figures). The same work per request in both servers, so the "
           "ratio of its shares is the ratio of CPU per request. `report.py compare --ruler` prints this check "
           "for any run.", "",
           "| server | ruler share | ruler samples | ruler µs/req | CPU µs/req (unprofiled) | CPU µs/req (profiled) |",
           "|---|---:|---:|---:|---:|---:|"]
    shown = [r for r in rows if r["server"] in stacks]
    for r in shown:
        out.append(f"| {r['server']} | {r['share_pct']:.2f} ± {r['share_err_pct']:.2f} % | {r['samples']:,} of "
                   f"{r['total_samples']:,} | {r['us_per_req']:.3f} ± {r['us_per_req_err']:.3f} | "
                   f"{metrics[r['server']]['cpu_us_per_req']:.2f} | {num(r['cpu_us_per_req_profiled'], 2)} |")
    pj, by_server = by_role["pajamax"][0], {r["server"]: r for r in rows}
    pj_row = by_server.get(pj)
    out.append("")
    for t in by_role["tonic"]:
        t_row = by_server.get(t)
        if not t_row or not pj_row or not t_row["samples"] or not pj_row["samples"]:
            continue
        measured, profiled = server_ratio(metrics[t], metrics[pj]), profiled_ratio(metrics[t], metrics[pj])
        paired = measured and profiled          # the document's one definition of the ratio, rounds paired
        c = ruler_check(t_row, pj_row, *((measured.ratio, profiled.ratio) if paired else ()))
        verdict = "agrees" if c["agrees"] else "DISAGREES beyond the sampling error"
        said = (f"{measured.text()} unprofiled, {profiled.text()} in the profile windows" if paired else
                f"{c['measured_ratio']:.1f}x unprofiled"
                + (f", {c['profiled_ratio']:.1f}x in the profile windows" if c["profiled_ratio"] else ""))
        out.append(f"- {pj} over {t}: ruler shares **{c['ratio']:.1f}x** [95 %: {c['ratio_low']:.1f}-"
                   f"{c['ratio_high']:.1f}] (seed 001: 9.4x); measured req/s per CPU {said}: the ruler {verdict}.")
    costs = [r for r in shown if r["samples"]]
    for a, b in combinations(costs, 2):
        hi, lo = (a, b) if a["us_per_req"] > b["us_per_req"] else (b, a)
        if hi["us_per_req"] - lo["us_per_req"] > 2 * (a["us_per_req_err"] ** 2 + b["us_per_req_err"] ** 2) ** 0.5:
            out.append(f"- The ruler's frames cost {hi['server']} {hi['us_per_req']:.3f} ± {hi['us_per_req_err']:.3f} "
                       f"µs per request and {lo['server']} {lo['us_per_req']:.3f} ± {lo['us_per_req_err']:.3f} "
                       f"({hi['us_per_req'] / lo['us_per_req']:.1f}x, beyond two standard errors): the same "
                       f"instructions take more time per request in {hi['server']}, so a share ratio against it "
                       "overstates how efficient it is.")
    out += ["", "The ruler's share ratio measures CPU per request in the profile windows, so it is checked against "
            "the ratio there; profiling overhead that differs between servers separates that from the "
            "unprofiled ratio.", ""]
    return out


def app_section(rules: Rules, metrics: dict, by_role: dict, stacks: dict) -> list[str]:
    """The same handler, different app µs per request: which work each server's app category holds,
    by the leaf frame of its samples (the handler frame decides; the leaf says what it was doing)."""
    out = ["## The app category: same handler, different cost", "",
           "Both servers run the same handler body, yet the app category differs. What the samples the app "
           "pattern decided were doing, by leaf frame, in µs per request:", ""]
    for s in by_role_list(by_role, stacks):
        m = metrics[s]
        r = rules.with_app(m.get("app"), f"{s}'s app pattern")
        b = categorize(stacks[s], r)
        us = m["cpu_us_per_req"]
        app_stacks = [(frames, w) for frames, w in stacks[s] if group_of(frames, r) == APP]
        leaves = Counter()
        for frames, w in app_stacks:
            leaves[frames[-1]] += w
        teardown, ruler = (frame_share(app_stacks, UserRegex(regex, label)).weight / b.total * us if b.total else 0
                           for regex, label in ((TEARDOWN, "teardown"), (RULER, "ruler")))
        out.append(f"- {s} (app pattern `{m.get('app')}`): app {b.share(APP) * us:.3f} µs/req "
                   f"({100 * b.share(APP):.2f} %, {round(b.share(APP) * b.samples):,} samples), of which "
                   f"{teardown:.3f} µs/req under drops and frees (`{TEARDOWN}`) and {ruler:.3f} µs/req in the "
                   f"ruler `{RULER}`; by leaf:")
        out += [f"  - {w / b.total * us:.3f} µs/req `{frame[:140]}`" for frame, w in leaves.most_common(8)]
    return out + [""]


def seed_002_section(runs: list[Path]) -> list[str]:
    """Seed 002 (two client machines, 2/4/8 server threads, 100 or 1,000 streams per connection): what this
    machine can reproduce of it, and the figures of runs of its stream counts at one server thread."""
    out = ["## Seed 002: one server thread at the seed's stream counts", "",
           "Seed 002 ran pajamax and tonic on one machine with 2, 4 and 8 server threads, driven by a client on "
           "two other machines, in two cases: (A) 100 concurrent streams per connection, 10,000 requests each; "
           "(B) 1,000 streams per connection, 1,000 requests each. It reports each server thread's CPU % and "
           "reads \"Pajamax's CPU is 9X ~ 10X free than Tonic's\". From its own table, tonic's CPU per request "
           "over pajamax's (CPU % per thread × run time, the same requests on the same threads):", "",
           "| case | threads | seed 002 time [s] pajamax / tonic | CPU % per thread pajamax / tonic | tonic's CPU per request over pajamax's |",
           "|---|---:|---|---|---:|"]
    out += [f"| {case} | {threads} | {times[0]} / {times[1]} | {cpus[0]} / {cpus[1]} | "
            f"{seed_002_cpu_ratio(times, cpus):.1f}x |"
            for case, rows in SEED_002.items() for threads, times, cpus in rows]
    manifest, _ = load_run(runs[0])
    p, m = manifest["parameters"], manifest.get("machine") or {}
    out += ["", f"What this machine cannot reproduce, from the first run's manifest: it has {m.get('cpus')} CPUs, the "
            f"server on CPU {p['server_cpus']} and the load on CPU {p['load_cpus']}. A server with 2, 4 or 8 threads "
            "would run them on CPUs the load generator uses, so its CPU could not be measured apart from the load's. "
            f"One load generator, not two machines; each window lasts {p['duration']:g} s rather than a fixed "
            "number of requests."]
    out += ["", "What it can: one server thread (rust_tonic_st is tonic on a current-thread runtime; pajamax serves "
            "one connection on one thread) under the seed's streams per connection, one connection. CPU per "
            "request is the figure that compares with the seed's, and its ratio is the ratio of req/s per CPU.", "",
            "| run | case | C | S | server | req/s | server CPU | client CPU | CPU µs/req | flags |",
            "|---|---|---:|---:|---|---:|---:|---:|---:|---|"]
    ratios = []
    for run in runs:
        manifest, metrics = load_run(run)
        p = manifest["parameters"]
        case = SEED_002_CASES.get(p["streams"] // p["connections"], "-")
        ok = [s for s in p["servers"] if (metrics.get(s) or {}).get("status") == Status.OK]
        for s in ok:
            m = metrics[s]
            out.append(f"| `{run.name}` | {case} | {p['connections']} | {p['streams']} | {s} | {num(m['req_per_s'], 0)} | "
                       f"{100 * m['server_cpu_cores']:.0f} % | {100 * m['client_cpu_cores']:.0f} % | "
                       f"{m['cpu_us_per_req']:.2f} | {notes_for(m) or '-'} |")
        by_role = roles(ok)
        ratios += [(case, run, t, pj, interval, metrics) for t in by_role["tonic"] for pj in by_role["pajamax"]
                   if (interval := server_ratio(metrics[t], metrics[pj]))]
    out.append("")
    for case, run, t, pj, interval, metrics in ratios:
        seed = [seed_002_cpu_ratio(times, cpus) for _, times, cpus in SEED_002.get(case, [])]
        seed_text = (f"; seed 002's case {case}: {min(seed):.1f}x to {max(seed):.1f}x, here ÷ seed "
                     f"{interval.ratio / max(seed):.1f} to {interval.ratio / min(seed):.1f}" if seed else "")
        out.append(f"- `{run.name}` (case {case}): {t}'s CPU per request over {pj}'s, the ratio of req/s per CPU: "
                   f"**{interval.text()}** over {interval.n} round{'s' if interval.n != 1 else ''}{seed_text}"
                   f"{seed_002_why(t, pj, metrics, interval.ratio, seed)}.")
    return out + ["", *seeds_003_004_lines(manifest)]


def seed_002_why(tonic: str, pajamax: str, metrics: dict, ratio: float, seed: list[float]) -> str:
    """Why the ratio lies outside seed 002's range by more than GAP, from the run's own figures: the
    requests each server answered per write, and who set the pace."""
    if not seed or min(seed) * (1 - GAP) <= ratio <= max(seed) * (1 + GAP):
        return ""
    writes = [f"{s} once per {1 / w:.1f}" for s in (pajamax, tonic)
              if (w := (metrics[s].get("syscalls") or {}).get("writes_per_req"))]
    bound = [s for s in (pajamax, tonic) if metrics[s].get("client_bound")]
    parts = [f"requests per write here: {', '.join(writes)}" if writes else "",
             f"the load generator set {', '.join(bound)}'s pace" if bound else ""]
    return " (" + "; ".join(x for x in parts if x) + ")" if any(parts) else ""


def seeds_003_004_lines(manifest: dict) -> list[str]:
    """Seeds 003 and 004, one line each: what this machine's CPUs (the manifest's) cannot reproduce, and why."""
    m, p = manifest.get("machine") or {}, manifest["parameters"]
    here = f"this machine has {m.get('cpus')} CPUs, the server on CPU {p['server_cpus']} and the load on CPU {p['load_cpus']}"
    return ["## Seeds 003 and 004", "",
            f"- Seed 003 (C, C++, Rust, Go, Java and Python servers, each on two cores of a larger machine, the load on "
            f"others, 100 in flight) reports each server's maximum rate on two cores: {here}, so a server given two "
            "cores would share them with the load, and its rate on two cores is not reproduced; each server's CPU "
            "per request on one core is (`profile.sh run` with those servers and `-S 100`).",
            f"- Seed 004 (grpc-js, grpc and Go servers on a macOS laptop, ghz with 100 in flight) reports CPU as a "
            "share of all the laptop's CPUs sampled by dtrace, and syscalls per second: neither the laptop's CPU count "
            f"nor its kernel is known, so its CPU per request cannot be derived to set beside this machine's ({here}).", ""]
