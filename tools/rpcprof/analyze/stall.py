"""A stalled window: the server stopped answering part-way through a measured window, with requests
still in flight, and its CPU went idle. Its figures describe a burst and a silence, not the server's pace,
so a run keeps them with the flag STALLED and its mechanism, in place of the advice to lengthen -d that a
merely short window gets (measure/windows.py too_short): a longer window only adds silence.

The test reads the window's timeline (analyze/timeline.py, slices of SLICE_S): the window is stalled when
its trailing slices, at least IDLE_SHARE of the window and MIN_IDLE_S long, counted no answered request
and the server's CPU under IDLE_CORES. The evidence (Evidence; report/mechanism.py says it), each part only when
its figures hold it:
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

from dataclasses import dataclass
from enum import StrEnum
from itertools import takewhile

IDLE_CORES = 0.05        # below this share of a CPU, the server is idle in a slice
IDLE_SHARE = 0.25        # the silent tail must be at least this share of the window ...
MIN_IDLE_S = 1.0         # ... and this long
FLOW_SHARE = 0.5         # in-flight bytes per connection at half the connection window or more: said


def silent_tail(timeline: dict | None) -> float:
    """Seconds at the end of the window in which no answered request started and the server's CPU idled."""
    if not timeline:
        return 0.0
    slices = zip(reversed(timeline["req_per_s"]), reversed(timeline["server_cpu_cores"]))
    return sum(1 for _ in takewhile(lambda s: not (s[0] or s[1] >= IDLE_CORES), slices)) * timeline["slice_s"]


class Mechanism(StrEnum):
    """A stall's mechanism, by the name a run keeps (result.json and metrics.json: stalled.mechanism)."""
    SPLIT = "connection closed on a message split across DATA frames"
    CLOSED_UNDER_FLOW_CONTROL = "connections closed under HTTP/2 flow control"
    CLOSED = "connections closed by the server"
    FLOW_CONTROL = "HTTP/2 flow control"
    NO_ANSWER = "no answer on open connections"


SPLIT = Mechanism.SPLIT     # the mechanism documents/provenance.py looks for


@dataclass(frozen=True)
class FlowControl:
    """The bytes of requests in flight on one connection against the connection window the server grants."""
    message_bytes: int                # one request's framed message
    need: int                         # their bytes
    grant: int                        # the connection window
    raised: bool                      # the server raised it from HTTP/2's 65,535 bytes at its start


@dataclass(frozen=True)
class Evidence:
    """What a stall's mechanism is named from, each part None where its figures do not hold it (report/mechanism.py)."""
    mechanism: Mechanism
    answered_for_s: float             # the window's time that had answers
    window_s: float
    answered: int
    in_flight: int                    # requests in flight (the streams) ...
    per_connection: int               # ... on one connection
    connections: int                  # the connections h2load opened ...
    closed: int | None                # ... of which the server closed these by the window's end
    still_open: int | None            # ... or these stayed open (none closed)
    flow: FlowControl | None          # at FLOW_SHARE of the connection window or more
    streams_allowed: int | None       # the server's MAX_CONCURRENT_STREAMS, where below the streams per connection
    replays: tuple[dict, ...] = ()    # the replays that were answered (measure/connections.parse_replay's records) ...
    connection_window: int | None = None   # ... and the connection window the server granted at the start


def stall(m: dict, connections: int, streams: int, message_bytes: int | None, conns: dict | None = None,
          h2: dict | None = None) -> dict | None:
    """The stall of a measured window (window_metrics' m), or None: the figures its evidence is said from
    (evidence(); report/mechanism.py says them) and its mechanism's name. conns: {start, end} established
    connections (start may already miss one closed in the window's first milliseconds); h2: measure/connections.h2_settings' answer; message_bytes: one
    request's framed gRPC message."""
    window = m.get("window_s") or 0.0
    timeline = m.get("timeline")
    idle = silent_tail(timeline)
    if not m.get("requests_ok") or idle < max(MIN_IDLE_S, IDLE_SHARE * window):
        return None
    out = {"answered": m["requests_ok"], "silent_s": round(idle, 3), "window_s": window, "slice_s": timeline["slice_s"],
           "connections_asked": connections, "streams": streams, "connections": conns, "h2": h2,
           "streams_per_connection": streams // connections, "message_bytes": message_bytes}
    out["mechanism"] = evidence(out).mechanism.value
    return out


def evidence(s: dict) -> Evidence:
    """The stall's mechanism and the figures of its evidence, each part only when its figures hold it."""
    window, connections, per_conn = s["window_s"], s["connections_asked"], s["streams_per_connection"]
    end = (s.get("connections") or {}).get("end")
    closed = end is not None and end < connections
    flow, most, h2, message_bytes = None, None, s.get("h2"), s.get("message_bytes")
    if h2 and message_bytes:
        need, grant = per_conn * message_bytes, h2["connection_window"]
        if need >= FLOW_SHARE * grant:
            flow = FlowControl(message_bytes, need, grant, grant != 65_535)
        most = h2["settings"].get("MAX_CONCURRENT_STREAMS")
        most = most if most is not None and most < per_conn else None
    replays = [r for r in (h2 or {}).get("replays") or [] if "answered" in r]
    split = (any(r.get("split") and r["answered"] < r["requests"] for r in replays)
             and all(r["answered"] == r["requests"] for r in replays if not r.get("split")))
    mechanism = (Mechanism.SPLIT if split else Mechanism.CLOSED_UNDER_FLOW_CONTROL if closed and flow else
                 Mechanism.CLOSED if closed else Mechanism.FLOW_CONTROL if flow else Mechanism.NO_ANSWER)
    return Evidence(mechanism, max(window - s["silent_s"], s["slice_s"]), window, s["answered"], s["streams"], per_conn,
                    connections, connections - end if closed else None, end if end is not None and not closed else None,
                    flow, most, tuple(replays), h2["connection_window"] if replays else None)
