"""Per-request CPU by category: the shares of the profile times the CPU µs per request measured in
the window with no profiler attached. The rows of each delta column add up to the total difference.
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from rpcprof.analyze.breakdowns import every_round, round_breakdowns, round_numbers, run_breakdowns
from rpcprof.analyze.categorize import Rules
from rpcprof.errors import UserError
from rpcprof.analyze.frames import frame_share, share_ratio
from rpcprof.analyze.patterns import UserRegex
from rpcprof.analyze.indirect import ruler_expectation
from rpcprof.analyze.intervals import pilot_of, profiled_ratio, server_ratio
from rpcprof.analyze.mechanism import kernel_table
from rpcprof.analyze.regime import regime_flags
from rpcprof.analyze.significance import paired_gap, sampling_variance
from rpcprof.analyze.whatif import estimate
from rpcprof.report.mechanism import FIGURE_NAMES, explain_gap, ruler_verdict
from rpcprof.report.summary import busy_flags, run_pace_findings, syscalls_per_request
from rpcprof.report.tables import render
from rpcprof.records import ROUND_KEY, ROUNDS_KEY, kernel_blind, round_of, round_rows, view_of
from rpcprof.rundir import RESULT_FILE, load_run, profile_folded
from rpcprof.status import MEASURED


def first_profiles(run_dir: Path, manifest: dict) -> dict[str, Path]:
    """Each server's first-round profile in a run folder, in the run's order."""
    return {name: profile_folded(run_dir, name) for name in manifest["parameters"]["servers"]}


def round_profiles(run_dir: Path, name: str, m: dict) -> dict[int, Path]:
    """{round: its profile} of a server of a run folder (m: its result)."""
    return {k: profile_folded(run_dir, name, k) for k in round_numbers(m)}


def round_records(run_dir: Path, server: str, metrics: dict) -> list[dict]:
    """The rounds of a server in a run that have a profile: round, profile file, unprofiled CPU µs per
    request and where that figure is (file and key), oldest first; one round for a result of one measurement."""
    m = metrics.get(server) or {}
    rows = round_rows(m)
    return [{"round": k, "profile": str(folded), "cpu_us_per_req": row.get("cpu_us_per_req"),
             "file": f"{server}/{RESULT_FILE}",
             "key": f"{ROUNDS_KEY}[{ROUND_KEY}={k}].cpu_us_per_req" if rows else "cpu_us_per_req"}
            for k, row in [(round_of(r), r) for r in rows] or [(1, m)]
            if (folded := profile_folded(run_dir, server, k)).exists() and folded.stat().st_size]


def render_shares(run_dir: Path, rules: Rules, fmt: str = "table") -> str:
    """The category share of each profile of a run (report.py table, for a run folder)."""
    manifest, metrics = load_run(run_dir)
    rows = [{"profile": name, "samples": b.samples,
             "event": ((metrics.get(name) or {}).get("profile") or {}).get("event", ""),
             **{c: 100 * b.share(c) for c in rules.all_categories}}
            for name, b in run_breakdowns(first_profiles(run_dir, manifest), metrics, rules).items()]
    columns = [("profile", "profile"), ("samples", "samples")] + [(c, f"{c} [%]") for c in rules.all_categories]
    return render(rows, columns, fmt)


def servers_of(columns: list[tuple[str, str]]) -> list[str]:
    """The servers of compare_rows' columns (its `SERVER_us` ones), in its order."""
    return [key[:-3] for key, _ in columns if key.endswith("_us") and not key.startswith("delta_")]


def compare_rows(run_dir: Path, rules: Rules, app_override: str | None = None
                 ) -> tuple[list[dict], list[tuple[str, str]], list[str], list[dict]]:
    """(rows, columns, header lines, the figures of each header line) comparing a run's servers per request."""
    manifest, metrics = load_run(run_dir)
    breakdowns = run_breakdowns(first_profiles(run_dir, manifest), metrics, rules, app_override)
    servers = [s for s in manifest["parameters"]["servers"] if s in breakdowns and metrics[s].get("cpu_us_per_req")]
    if not servers:
        raise UserError(f"{run_dir}: no server with both a measured window and a profile (run without --no-profile)")
    base, views = servers[0], {s for s in servers if view_of(metrics, s)}
    rounds = {s: round_breakdowns(round_profiles(run_dir, s, metrics[s]), rules, metrics[s], s, app_override)
              for s in servers}
    by_rounds = all(len(r) >= 2 for r in rounds.values())
    min_samples = manifest["parameters"].get("min_samples")
    head, figures = [], []
    for s in servers:
        m = metrics[s]
        prof = m.get("profile") or {}
        # the run table's ratio: from the rounds' adjacent pairs when there are some, else of the means
        view = view_of(metrics, s)
        interval = server_ratio(metrics[base], m, pilot=pilot_of(manifest["parameters"])) if s not in views | {base} else None
        ratio = None if view else interval.ratio if interval else m["req_per_cpu_s"] / metrics[base]["req_per_cpu_s"]
        samples = sum(b.samples for _, b in rounds[s].values()) if by_rounds else breakdowns[s].samples
        few = samples < min_samples if by_rounds and min_samples else prof.get("too_few_samples")
        note = "  TOO FEW SAMPLES" * bool(few) + "".join(f"  {flag}" for flag in regime_flags(m) + busy_flags(m))
        overhead, cost = prof.get("overhead_pct"), prof.get("overhead_interval_pct")
        relation = f"the process of {view} again, profiled by {prof.get('profiler')}" if view else f"x{ratio:.2f} of {base}"
        # the run's figures are its median round's; the table's total is the profiled rounds' mean
        mean = sum(cpu for cpu, _ in rounds[s].values()) / len(rounds[s]) if by_rounds else None
        head.append(f"{s}: {m['req_per_cpu_s']:,.0f} req/s per CPU ({relation}), "
                    f"{m['cpu_us_per_req']:.2f} CPU µs/req "
                    + ("measured while profiling" if m.get("cpu_note") else "unprofiled")
                    + (f" (its median round; {mean:.2f} the mean, the total below)" if mean is not None else "")
                    + (f", {round(overhead):+d} % while profiled" if overhead is not None else "")   # never "-0"
                    + (f" [{round(cost[0]):+d} to {round(cost[1]):+d} %]" if cost else "")
                    + f", {samples:,} samples" + (f" in {len(rounds[s])} rounds" if by_rounds else "") + note)
        figures.append({"server": s, "req_per_cpu_s": m["req_per_cpu_s"], "ratio": ratio,
                        "ratio_low": interval and interval.low, "ratio_high": interval and interval.high,
                        "cpu_us_per_req": m["cpu_us_per_req"], "cpu_us_per_req_mean": mean,
                        "cpu_measured_while_profiling": bool(m.get("cpu_note")),
                        "overhead_pct": overhead, "overhead_low_pct": cost[0] if cost else None,
                        "overhead_high_pct": cost[1] if cost else None, "samples": samples,
                        "rounds": len(rounds[s]) if by_rounds else None, "too_few_samples": bool(few),
                        "regime_flags": regime_flags(m), "neighbours": m.get("neighbours"), "steal": m.get("steal")})
    # a profiler that sees no kernel time (py-spy) puts nothing in the socket categories: a gap there is unseen
    blind = {s: p for s in servers if (p := kernel_blind(metrics[s]))}
    head += [f"{s}: profiled by {p}, which sees no kernel time: {' and '.join(rules.groups.socket)} are not in its "
             "profile, and no gap in them is given." for s, p in blind.items()]
    if by_rounds:
        return unseen(interval_rows(rules, servers, rounds, views), rules, servers, blind), \
            comparison_columns(servers, True, views), head + [
            "µs/req: the mean over rounds of each round's profile shares × its unprofiled CPU per request, ± the "
            "half-width of its 95 % interval across rounds; Δ paired round by round, * where its interval excludes 0, "
            "n.s. (not significant) where it contains 0."], figures
    rows = []
    for cat in rules.all_categories + ["total"]:
        row = {"category": cat}
        for s in servers:
            share = 1.0 if cat == "total" else breakdowns[s].share(cat)
            row.update({f"{s}_us": share * metrics[s]["cpu_us_per_req"], f"{s}_share": 100 * share})
        rows.append(row | {f"delta_{s}": row[f"{s}_us"] - row[f"{base}_us"] for s in servers[1:] if s not in views})
    return unseen(rows, rules, servers, blind), comparison_columns(servers, False, views), head, figures


def unseen(rows: list[dict], rules: Rules, servers: list[str], blind: dict[str, str]) -> list[dict]:
    """rows without the gaps in the socket categories of a server whose profiler saw no kernel time (blind),
    or of any server against a blind first one."""
    for row in rows:
        if row["category"] in rules.groups.socket:
            for s in servers[1:]:
                if {s, servers[0]} & set(blind) and f"delta_{s}" in row:
                    row.update({f"delta_{s}": None, f"delta_{s}_pm": None, f"delta_{s}_sig": "",
                                f"delta_{s}_significant": None})
    return rows


def interval_rows(rules: Rules, servers: list[str], rounds: dict[str, dict], views: set[str]) -> list[dict]:
    """Category rows with each server's mean µs/req across rounds and its 95 % interval, and each gap to
    the first server but views paired by round (rounds both measured), with its interval and significance."""
    base = servers[0]
    rows = []
    for cat in rules.all_categories + ["total"]:
        row = {"category": cat}
        per = {}
        for s in servers:
            per[s] = {k: us * (1.0 if cat == "total" else b.share(cat)) for k, (us, b) in rounds[s].items()}
            mean = estimate(list(per[s].values()))          # with the half-width of its 95 % t interval
            shares = [1.0 if cat == "total" else b.share(cat) for _, b in rounds[s].values()]
            row.update({f"{s}_us": mean.value, f"{s}_pm": mean.half, f"{s}_share": 100 * sum(shares) / len(shares)})
        for s in (s for s in servers[1:] if s not in views):
            floor = sum(statistics.fmean(sampling_variance(1.0 if cat == "total" else b.share(cat), b.samples, us)
                                         for us, b in rounds[x].values()) for x in (base, s))
            g = paired_gap(per[base], per[s], floor)
            row[f"delta_{s}"], row[f"delta_{s}_pm"] = g.delta, g.half
            row[f"delta_{s}_sig"], row[f"delta_{s}_significant"] = g.mark(), g.significant
        rows.append(row)
    return rows


def comparison_columns(servers: list[str], intervals: bool, views: set[str] = frozenset()) -> list[tuple[str, str]]:
    """Each server's µs/req and share, then each one's gap to the first but for views (a second view of one
    process: records.view_of); intervals: with the half-width of each interval (±) and the gap's significance."""
    columns = [("category", "category")]
    for s in servers:
        columns += [(f"{s}_us", f"{s} [µs/req]"), *[(f"{s}_pm", "±")] * intervals, (f"{s}_share", f"{s} [%]")]
    for s in (s for s in servers[1:] if s not in views):
        columns += [(f"delta_{s}", f"Δ {s}−{servers[0]} [µs/req]"),
                    *[(f"delta_{s}_pm", "±"), (f"delta_{s}_sig", "")] * intervals]
    return columns


def ruler_rows(run_dir: Path, ruler_override: str | None = None,
               keep_shares: bool = False, indirect=None) -> tuple[list[dict], list[str]]:
    """Seed 001's check, per profiled server: the ruler's share (with its sampling error) and µs per
    request; per server after the first with the same ruler, the ratio of ruler shares (95 % interval)
    beside the measured req/s-per-CPU ratios, profiled and unprofiled; with indirect (analyze/indirect.py),
    the ratio to expect given both servers' syscalls per request, DISAGREE only outside it. (rows, sentences)."""
    manifest, metrics = load_run(run_dir)
    if ruler_override:
        UserRegex(ruler_override, "--ruler")
    rows = []
    for name in manifest["parameters"]["servers"]:
        m = metrics.get(name) or {}
        folded = profile_folded(run_dir, name)
        regex = ruler_override or m.get("ruler")        # runs made before rulers recorded none: --ruler
        if not regex or m.get("status") not in MEASURED or not folded.exists() or not m.get("cpu_us_per_req"):
            continue
        fs = frame_share(every_round(round_profiles(run_dir, name, m)), UserRegex(regex, f"{name}'s ruler"))
        us = m["cpu_us_per_req"]
        rows.append({"server": name, "ruler": regex, "share_pct": 100 * fs.share, "share_err_pct": 100 * fs.stderr,
                     "samples": fs.samples, "total_samples": fs.total_samples, "us_per_req": fs.share * us,
                     "us_per_req_err": fs.stderr * us, "req_per_cpu_s": m["req_per_cpu_s"],
                     "cpu_us_per_req_profiled": (m.get("profile") or {}).get("cpu_us_per_req_profiled"), "_fs": fs})
    lines = []
    for i, b in enumerate(rows):
        base = None if view_of(metrics, b["server"]) else next((a for a in rows[:i] if a["ruler"] == b["ruler"]), None)
        if not base:
            b.update(dict.fromkeys(("ratio", "ratio_low", "ratio_high", "measured_ratio", "profiled_ratio", "agrees",
                                    "base")))
            continue
        # with rounds, the ratios are the run's own (its adjacent pairs), as the ruler's samples are every round's
        paired = (f(metrics[base["server"]], metrics[b["server"]]) for f in (server_ratio, profiled_ratio))
        b.update(ruler_check(base, b, *(r.ratio if r else None for r in paired)), base=base["server"])
        if b["ratio"] is None:
            lines.append(f"{b['server']} vs {base['server']}: the ruler matched no sample in one of them: no check")
            continue
        verdict = ("agree within the sampling error" if b["agrees"] else
                   "DISAGREE beyond the sampling error: " + disagreement(base, b, metrics))
        sc = [syscalls_per_request((metrics.get(r["server"]) or {}).get("syscalls")) for r in (base, b)]
        if indirect is not None:
            b.update(ruler_expectation(indirect, b, base, *sc))
            if b["expected_ratio"] is not None:
                verdict = ruler_verdict(b, base, *sc, indirect)
        profiled = f", ^{b['profiled_ratio']:.2f} while profiled" if b["profiled_ratio"] else ""
        lines.append(f"{b['server']} vs {base['server']}: ruler shares ^{b['ratio']:.2f} [{b['ratio_low']:.2f}-"
                     f"{b['ratio_high']:.2f}], req/s per CPU ^{b['measured_ratio']:.2f} unprofiled{profiled}: {verdict}")
    if not keep_shares:             # the FrameShare behind each row, for ruler_check on other pairs
        rows = [{k: v for k, v in row.items() if k != "_fs"} for row in rows]
    return rows, lines


def disagreement(base: dict, row: dict, metrics: dict) -> str:
    """Why the ruler's share ratio misses the CPU-per-request ratio, from the figures: the ruler's own cost
    per request differs (the same work costs more in one server), and whether that follows the syscalls
    per request (user code runs slower after a syscall has evicted its caches and predictors: inferred,
    this machine has no PMU to count it), or the figures give no reason."""
    a, b = base["us_per_req"], row["us_per_req"]
    err = math.hypot(base["us_per_req_err"], row["us_per_req_err"])
    if abs(a - b) <= 2 * err:
        return (f"the ruler costs alike ({a:.3f} and {b:.3f} µs/req), so the shares around it are attributed "
                "differently; compare the categories")
    more, less = (base, row) if a > b else (row, base)
    hi, lo = (syscalls_per_request((metrics.get(r["server"]) or {}).get("syscalls")) for r in (more, less))
    text = (f"the same work costs {max(a, b):.3f} µs/req in {more['server']} and {min(a, b):.3f} in {less['server']} "
            f"(±{2 * err:.3f})")
    if hi is not None and lo is not None and hi > 2 * lo:
        return (text + f"; {more['server']} makes {hi:.2f} syscalls per request, {less['server']} {lo:.2f}: user code "
                "slowed by the extra syscalls (caches and predictors evicted; inferred, not counted: no PMU here) "
                "would make it so")
    if hi is not None and lo is not None:
        return text + f", and not where more syscalls run ({hi:.2f} vs {lo:.2f} per request): the figures give no reason"
    return text + "; no syscall counts to say why"


def ruler_check(base: dict, row: dict, measured: float | None = None, profiled: float | None = None) -> dict:
    """row's ruler against base's (two rows of ruler_rows, before `_fs` is dropped): the ratio of ruler shares
    with its 95 % interval, the measured req/s-per-CPU ratios (measured, profiled: over the run's rounds, paired),
    and whether they agree; the share ratio, CPU per request in the profile windows, is checked against the ratio
    there (profiled) where there is one."""
    out = {"measured_ratio": measured or row["req_per_cpu_s"] / base["req_per_cpu_s"], "profiled_ratio": profiled,
           "ratio": None, "ratio_low": None, "ratio_high": None, "agrees": None}
    if not profiled and base["cpu_us_per_req_profiled"] and row["cpu_us_per_req_profiled"]:
        out["profiled_ratio"] = base["cpu_us_per_req_profiled"] / row["cpu_us_per_req_profiled"]
    r = share_ratio(base["_fs"], row["_fs"])
    if r is not None:
        out["ratio"], out["ratio_low"], out["ratio_high"] = r
        out["agrees"] = r[1] <= (out["profiled_ratio"] or out["measured_ratio"]) <= r[2]
    return out


def explanations(run_dir: Path, rules: Rules, app_override: str | None = None, indirect=None) -> list[dict]:
    """Per server after the first: the gap to the first explained by mechanism (level-2 groups and the
    kernel's per-request figures of the syscall window), whatever grouping the report shows."""
    rows, columns, *_ = compare_rows(run_dir, rules.using(level=2), app_override)
    _, metrics = load_run(run_dir)
    servers = servers_of(columns)
    us = {s: {r["category"]: r[f"{s}_us"] for r in rows if r["category"] != "total"} for s in servers}
    syscalls = {s: metrics[s].get("syscalls") for s in servers}
    gaps = {s: explain_gap(servers[0], s, us, syscalls, rules.groups, indirect=indirect) for s in servers[1:]
            if not view_of(metrics, s)}
    return [{"base": servers[0], "server": other, "headline": headline, "findings": findings}
            for other, (headline, findings) in gaps.items()]


def kernel_rows(metrics: dict, servers: list[str]) -> list[dict]:
    """A row per kernel figure of the syscall window (per request), a column per server; none no server has."""
    tables = {s: kernel_table((metrics.get(s) or {}).get("syscalls")) for s in servers}
    rows = [{"figure": FIGURE_NAMES[name], "key": fig.key, **{s: tables[s][name].value for s in servers}}
            for name, fig in (tables[servers[0]].items() if servers else ())]
    return [row for row in rows if any(row[s] is not None for s in servers)]


WINDOWS = {**dict.fromkeys((None, "own"), "the syscall window: tracepoints counted in the kernel, no profiler"),
           "profile": "the profile window: syscalls counted in the kernel on the server's CPUs while it was sampled",
           "io-sizes": "the read/write size window"}


def counted_in(metrics: dict, servers: list[str]) -> str:
    """The window the servers' kernel figures were counted in, in a word: "syscall" (a window of its own) or "profile"."""
    return "syscall" if all(((metrics.get(x) or {}).get("syscalls") or {}).get("window") in (None, "own")
                            for x in servers) else "profile"


def kernel_source(metrics: dict, servers: list[str]) -> str:
    """Which window the kernel figures come from, as the runs recorded it (runs before the counts moved
    into the profile window had a syscall window of their own); context switches and page faults are the
    process's own /proc counters where the syscalls were counted on its CPUs."""
    windows = {((metrics.get(s) or {}).get("syscalls") or {}).get("window") for s in servers}
    own = any(((metrics.get(s) or {}).get("syscalls") or {}).get("scope", "").startswith("CPU") for s in servers)
    return "; ".join(WINDOWS.get(w, str(w)) for w in sorted(windows, key=str)) + (
        "; context switches and page faults from the process's own counters (/proc)" * own)


def render_explanations(explained: list[dict], fmt: str = "table") -> str:
    """The explanations as text: a headline per server, a bullet per finding."""
    bullet = "- " if fmt == "markdown" else "  "
    lines = [x for e in explained for x in [e["headline"], *(bullet + f["text"] for f in e["findings"])]]
    return "\n".join(lines) + "\n" if lines else ""


def window_words(while_profiled: list[str], servers: list[str]) -> str:
    """Which window each server's CPU per request is from: the unprofiled one, unless measured while profiling
    (an attach given --requests or --rps)."""
    if not while_profiled:
        return "unprofiled window"
    if len(while_profiled) == len(servers):
        return "profiled window (no window was measured without the profiler)"
    return f"unprofiled window ({', '.join(while_profiled)}: the profiled one)"


RULER_COLUMNS = [("server", "server"), ("share_pct", "ruler [%]"), ("share_err_pct", "± [%]"),
                 ("samples", "ruler samples"), ("us_per_req", "ruler [µs/req]"), ("us_per_req_err", "± [µs/req]")]


def render_compare(run_dir: Path, rules: Rules, fmt: str = "table", app_override: str | None = None,
                   ruler_override: str | None = None, indirect=None) -> str:
    rows, columns, head, figures = compare_rows(run_dir, rules, app_override)
    ruler, ruler_lines = ruler_rows(run_dir, ruler_override, indirect=indirect)
    explained = explanations(run_dir, rules, app_override, indirect)
    servers = servers_of(columns)
    metrics = load_run(run_dir)[1]
    kernel = kernel_rows(metrics, servers)
    paces = run_pace_findings(run_dir, rules, metrics, servers)
    if fmt == "json":
        rounds = {s: round_records(run_dir, s, metrics) for s in servers}     # the files behind µs/req
        return json.dumps({"servers": head, "server_figures": figures, "rows": rows, "ruler": ruler,
                           "ruler_checks": ruler_lines, "rounds": rounds, "kernel": kernel, "explanation": explained,
                           "paces": paces}, indent=2, sort_keys=True) + "\n"
    if fmt == "csv":
        return render(rows, columns, fmt)
    # groups no server has (runtime/gc in Rust servers...) say nothing
    shown_rows = [r for r in rows if r["category"] in ("total", "other") or
                  any(r[k] for k, _ in columns if k.endswith("_share"))]
    text = "\n".join(head + [x for f in paces for x in f["lines"]]) + "\n\n" + render(shown_rows, columns, fmt) + (
        "CPU µs per request = category share of the profile × server CPU µs per request of the "
        + window_words([s for s in servers if (metrics.get(s) or {}).get("cpu_note")], servers) + ".\nShares weigh perf samples by their period (inferno), py-spy samples by count.\n" + (
        "" if any(k.endswith("_pm") for k, _ in columns) or not any(k.startswith("delta_") for k, _ in columns) else
        "One round per server: a gap's significance needs rounds (profile.sh run --rounds 3 or more).\n"))
    if kernel:
        text += (f"\nKernel, per request ({kernel_source(metrics, servers)}):\n\n"
                 + render(kernel, [("figure", "figure")] + [(s, s) for s in servers], fmt))
    if explained:
        text += (f"\nWhy, by mechanism (level-2 groups; kernel figures per request from the {counted_in(metrics, servers)} "
                 "window; "
                 "`--format json` names the figure behind each number):\n\n" + render_explanations(explained, fmt))
    if ruler:
        regexes = sorted({r["ruler"] for r in ruler})
        text += ("\nRuler (frames doing the same work per request in each server: " + ", ".join(regexes)
                 + "; ± is one binomial standard error from the sample count):\n\n"
                 + render(ruler, RULER_COLUMNS, fmt) + "".join(line + "\n" for line in ruler_lines))
    return text
