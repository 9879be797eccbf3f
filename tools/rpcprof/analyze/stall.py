"""A stalled window: the server stopped answering part-way through a measured window, with requests
still in flight, and its CPU went idle. Its figures describe a burst and a silence, not the server's pace,
so a run keeps them with the flag STALLED and the evidence, in place of the advice to lengthen -d that a
merely short window gets (measure/windows.py too_short): a longer window only adds silence.

The test reads the window's timeline (analyze/timeline.py, slices of SLICE_S): the window is stalled when
its trailing slices, at least IDLE_SHARE of the window and MIN_IDLE_S long, counted no answered request
and the server's CPU under IDLE_CORES. The evidence, each line said only when its figures hold it:
  - the connections: how many of the C that h2load opened the server still held just before the window's end
    (measure/connections.py: fewer means the server closed them, or an error did);
  - HTTP/2 flow control: the bytes of requests in flight on one connection, S/C times the framed
    message, against the connection window the server grants (its SETTINGS and any WINDOW_UPDATE on
    stream 0 before its first reply; 65,535 bytes when it raises none), said when they reach half of it;
  - max concurrent streams: the server's SETTINGS_MAX_CONCURRENT_STREAMS, said when below S/C;
  - the replays (measure/connections.py), when that window can run short: on one new connection, as many
    requests as fit in the window whole, then as many as the server allows in flight; said with the first
    message the client split for want of window and how many the server answered before the connection
    ended. A split followed by a connection ended short of its answers, while the whole messages were all
    answered, names the mechanism SPLIT: the server drops a connection on a message sent in pieces.
"""
from __future__ import annotations

from rpcprof.analyze.timeline import SLICE_S

IDLE_CORES = 0.05        # below this share of a CPU, the server is idle in a slice
IDLE_SHARE = 0.25        # the silent tail must be at least this share of the window ...
MIN_IDLE_S = 1.0         # ... and this long
FLOW_SHARE = 0.5         # in-flight bytes per connection at half the connection window or more: said
SPLIT = "connection closed on a message split across DATA frames"


def silent_tail(timeline: dict | None) -> float:
    """Seconds at the end of the window in which no answered request started and the server's CPU idled."""
    if not timeline:
        return 0.0
    n = 0
    for rate, cores in zip(reversed(timeline["req_per_s"]), reversed(timeline["server_cpu_cores"])):
        if rate or cores >= IDLE_CORES:
            break
        n += 1
    return n * timeline["slice_s"]


def stall(m: dict, connections: int, streams: int, message_bytes: int | None, conns: dict | None = None,
          h2: dict | None = None) -> dict | None:
    """The stall of a measured window (window_metrics' m), or None: the figures its evidence is said from
    (evidence()). conns: {start, end} established connections (start may already miss one closed in the
    window's first milliseconds); h2: measure/connections.h2_settings' answer; message_bytes: one
    request's framed gRPC message."""
    window = m.get("window_s") or 0.0
    timeline = m.get("timeline")
    idle = silent_tail(timeline)
    if not m.get("requests_ok") or idle < max(MIN_IDLE_S, IDLE_SHARE * window):
        return None
    out = {"answered": m["requests_ok"], "silent_s": round(idle, 3), "window_s": window, "slice_s": timeline["slice_s"],
           "connections_asked": connections, "streams": streams, "connections": conns, "h2": h2,
           "streams_per_connection": streams // connections, "message_bytes": message_bytes}
    out["mechanism"], _ = evidence(out)
    return out


def evidence(s: dict) -> tuple[str, list[str]]:
    """The mechanism's name and the lines of evidence, each said only when its figures hold it."""
    window, connections, per_conn = s["window_s"], s["connections_asked"], s["streams_per_connection"]
    answered_for = max(window - s["silent_s"], s["slice_s"])
    lines = [f"answers stopped within the window's first {answered_for:.1f} s of {window:.3g} s, after "
             f"{s['answered']:,} requests, the server's CPU idle from then on, with {s['streams']:,} requests in flight"]
    end = (s.get("connections") or {}).get("end")
    closed = end is not None and end < connections
    if closed:
        lines.append(f"{connections - end} of the {connections} connection(s) h2load opened were closed by the window's "
                     "end (h2load closes and reopens none of its own in a timed window)")
    elif end is not None:
        lines.append(f"its {end} connection(s) stayed open: it stopped answering on them (where its threads "
                     "waited: the off-CPU window)")
    flow, h2, message_bytes = False, s.get("h2"), s.get("message_bytes")
    if h2 and message_bytes:
        need, grant = per_conn * message_bytes, h2["connection_window"]
        flow = need >= FLOW_SHARE * grant
        if flow:
            raised = "" if grant == 65_535 else " (raised at its start)"
            lines.append(f"each connection carried {per_conn:,} requests of {message_bytes} B, {need:,} B against the "
                         f"{grant:,} B connection flow-control window the server grants{raised}, credited back as it "
                         "reads: the client waits on flow control, and sends a request's message in pieces when "
                         "the window runs short")
        most = h2["settings"].get("MAX_CONCURRENT_STREAMS")
        if most is not None and most < per_conn:
            lines.append(f"the server allows {most:,} concurrent streams on a connection, fewer than the {per_conn:,} "
                         "asked: the client queues the rest")
    replays = (h2 or {}).get("replays") or []
    said = [replay_line(r, h2["connection_window"]) for r in replays if "answered" in r]
    if said:
        lines.append("replayed after the window, each on one new connection with nghttp: " + "; ".join(said))
    split = (any(r.get("split") and r["answered"] < r["requests"] for r in replays if "answered" in r)
             and all(r["answered"] == r["requests"] for r in replays if "answered" in r and not r.get("split")))
    mechanism = (SPLIT if split else
                 "connections closed under HTTP/2 flow control" if closed and flow else
                 "connections closed by the server" if closed else
                 "HTTP/2 flow control" if flow else "no answer on open connections")
    return mechanism, lines


def replay_line(r: dict, window: int) -> str:
    """One replay (measure/connections.parse_replay) said: what was sent, what was answered, how it ended;
    window: the connection window the server granted at the start."""
    n, size = r["requests"], r["message_bytes"]
    head = f"{n:,} requests of {size} B ({n * size:,} B)"
    ended = ("" if r["answered"] == n else
             " and ended the connection with " + ("a GOAWAY" if r.get("goaway") else
                                                 f"{r['rst_streams']} RST_STREAM" if r.get("rst_streams") else
                                                 "neither GOAWAY nor RST_STREAM"))
    split = r.get("split")
    if not split:
        return f"{head}: none split, {r['answered']:,} answered{ended}"
    left = window + split["credited_before"] - split["data_before"]
    return (f"{head}: {split['data_before']:,} B of DATA sent and {split['credited_before']:,} B credited back left "
            f"{left:,} B of the {window:,} B window, and the client sent stream {split['stream']}'s {size} B message "
            f"as a DATA frame of {split['sent']} B without END_STREAM, the rest to follow; the server answered "
            f"{r['answered']:,} of the {n:,}{ended}")


def describe(s: dict, connections: int | None = None, streams: int | None = None) -> str:
    """One line: the mechanism, then the evidence. A record made before the figures were kept all is said
    from them with the run's C and S when the caller knows them, else in its own saved lines."""
    if "connections_asked" not in s and connections and streams:
        s = {**s, "connections_asked": connections, "streams": streams, "slice_s": SLICE_S}
    mechanism, lines = evidence(s) if "connections_asked" in s else (s["mechanism"], s["evidence"])
    return f"STALLED ({mechanism}): " + "; ".join(lines)
