"""A stalled window said: its mechanism, then the evidence (analyze/stall.py's figures), each line only
when its figures hold it, and the replays of its load after the window (measure/connections.py's records).
"""
from __future__ import annotations

from rpcprof.analyze.stall import Evidence, evidence
from rpcprof.analyze.timeline import SLICE_S


def evidence_lines(e: Evidence) -> list[str]:
    """The answers' stop, then the connections, the flow control and the streams allowed where they speak."""
    lines = [f"answers stopped within the window's first {e.answered_for_s:.1f} s of {e.window_s:.3g} s, after "
             f"{e.answered:,} requests, the server's CPU idle from then on, with {e.in_flight:,} requests in flight"]
    if e.closed is not None:
        lines.append(f"{e.closed} of the {e.connections} connection(s) h2load opened were closed by the window's "
                     "end (h2load closes and reopens none of its own in a timed window)")
    elif e.still_open is not None:
        lines.append(f"its {e.still_open} connection(s) stayed open: it stopped answering on them (where its threads "
                     "waited: the off-CPU window)")
    if e.flow:
        f = e.flow
        raised = " (raised at its start)" if f.raised else ""
        lines.append(f"each connection carried {e.per_connection:,} requests of {f.message_bytes} B, {f.need:,} B "
                     f"against the {f.grant:,} B connection flow-control window the server grants{raised}, credited "
                     "back as it reads: the client waits on flow control, and sends a request's message in pieces "
                     "when the window runs short")
    if e.streams_allowed is not None:
        lines.append(f"the server allows {e.streams_allowed:,} concurrent streams on a connection, fewer than the "
                     f"{e.per_connection:,} asked: the client queues the rest")
    if e.replays:
        lines.append("replayed after the window, each on one new connection with nghttp: "
                     + "; ".join(replay_line(r, e.connection_window) for r in e.replays))
    return lines


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
    if "connections_asked" in s:
        e = evidence(s)
        mechanism, lines = e.mechanism.value, evidence_lines(e)
    else:
        mechanism, lines = s["mechanism"], s["evidence"]
    return f"STALLED ({mechanism}): " + "; ".join(lines)
