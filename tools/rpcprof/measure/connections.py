"""The server's TCP connections and the HTTP/2 settings it grants a client: the evidence a stalled window
is read by (analyze/stall.py).

established(port) counts the connections whose local end is the server's port, in ESTABLISHED state,
from /proc/net/tcp and /proc/net/tcp6 (a read of the kernel's table: no process started, so it is taken
at the measured window's start and a quarter second before its end, h2load's connections up at both). A count that drops during a
timed h2load window was closed by the server or by an error: h2load does not close or reopen a connection
of its own in a timed window.

h2_settings(port, path, body) makes one gRPC call with `nghttp -v` (Debian nghttp2-client, beside h2load)
and reads what the server sent before its reply: its SETTINGS (SETTINGS_MAX_CONCURRENT_STREAMS,
SETTINGS_INITIAL_WINDOW_SIZE) and any WINDOW_UPDATE on stream 0, which raises the connection's
flow-control window above HTTP/2's initial 65,535 bytes (RFC 9113 6.9.2). It starts a process, so it runs
after a window, never inside one.

When that window holds fewer of the run's messages than the server lets a connection have in flight, the
window can run short, and the client then sends a message in pieces (RFC 9113 6.9.1: a DATA frame no larger
than the window left). h2_settings then replays it on one new connection, twice (replay()): as many
requests as fit in the window whole (it cannot run short), and as many as the server allows in flight, up
to REPLAY_WINDOWS windows' worth. Each replay says how many were answered, the first message the client
split (its stream, the bytes it sent of it, the DATA sent and the window credited back before it), and what
the server ended the connection with (GOAWAY, RST_STREAM, or nothing).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from rpcprof.measure.children import output, read_stripped

ESTABLISHED = "01"
H2_INITIAL_WINDOW = 65_535      # RFC 9113 6.5.2 / 6.9.2: each stream's and the connection's window
_SETTING = re.compile(r"\[SETTINGS_(\w+)\(0x[0-9a-f]+\):(\d+)\]")
_FRAME = re.compile(r"^\[\s*[\d.]+\] (recv|send) (\w+) frame <length=\d+, flags=0x[0-9a-f]+, stream_id=(\d+)>")
_INCREMENT = re.compile(r"\(window_size_increment=(\d+)\)")
_DATA = re.compile(r"^\[\s*[\d.]+\] send DATA frame <length=(\d+), flags=0x([0-9a-f]+), stream_id=(\d+)>")
_ANSWERED = re.compile(r"^\[\s*[\d.]+\] recv \(stream_id=\d+\) grpc-status: 0$")
END_STREAM = 0x1
REPLAY_WINDOWS = 2      # the longer replay asks for up to this many connection windows' worth of messages


def established(port: int, tables=(Path("/proc/net/tcp"), Path("/proc/net/tcp6"))) -> int:
    """Connections in ESTABLISHED state whose local port is port."""
    want = f":{port:04X}"
    rows = [line.split() for table in tables for line in (read_stripped(table) or "").splitlines()[1:]]
    return sum(len(f) > 3 and f[1].endswith(want) and f[3] == ESTABLISHED for f in rows)


def _frames(text: str):
    """Each line of `nghttp -v` output, with the frame it is of ((recv or send, type, stream) or None) and
    the HTTP/2 connection window it credits (a WINDOW_UPDATE's increment on stream 0 received, else 0)."""
    frame = None
    for line in text.splitlines():
        if m := _FRAME.match(line):
            frame = (m.group(1), m.group(2), int(m.group(3)))
        i = _INCREMENT.search(line) if not m and frame == ("recv", "WINDOW_UPDATE", 0) else None
        yield line, frame, bool(m), int(i.group(1)) if i else 0


def parse_nghttp(text: str) -> dict:
    """What the server sent before the call's reply, from `nghttp -v` output: {settings: {NAME: value},
    connection_window: bytes (65,535 plus every WINDOW_UPDATE on stream 0 received before the reply's
    HEADERS)}."""
    settings: dict[str, int] = {}
    window = H2_INITIAL_WINDOW
    for line, frame, starts, credit in _frames(text):
        if starts and frame[:2] == ("recv", "HEADERS"):
            break
        if not starts and frame and frame[:2] == ("recv", "SETTINGS"):
            for name, value in _SETTING.findall(line):
                settings[name] = int(value)
        window += credit
    return {"settings": settings, "connection_window": window}


def parse_replay(text: str, message_bytes: int) -> dict:
    """One replay's figures from `nghttp -v -m N` output: {requests, answered (grpc-status 0), split: the
    first message sent in pieces ({stream, sent: its first DATA frame's bytes, data_before: DATA bytes sent
    before it, credited_before: WINDOW_UPDATE bytes on stream 0 received before it}) or None, goaway,
    rst_streams: frames the server sent}."""
    requests = answered = sent = credited = rst = 0
    split, goaway = None, False
    for line, frame, starts, credit in _frames(text):
        if d := _DATA.match(line):
            length, flags, stream = int(d.group(1)), int(d.group(2), 16), int(d.group(3))
            if split is None and length < message_bytes and not flags & END_STREAM:
                split = {"stream": stream, "sent": length, "data_before": sent, "credited_before": credited}
            sent += length
        if _ANSWERED.match(line):
            answered += 1
        if starts:
            requests += frame[:2] == ("send", "HEADERS")
            goaway |= frame[:2] == ("recv", "GOAWAY")
            rst += frame[:2] == ("recv", "RST_STREAM")
        credited += credit
    return {"requests": requests, "message_bytes": message_bytes, "answered": answered, "split": split,
            "goaway": goaway, "rst_streams": rst}


def replay_sizes(settings: dict, window: int, message_bytes: int) -> tuple[int, ...]:
    """The two replays' requests (module doc), or none when the window holds every message the server allows
    in flight on a connection (it cannot run short then)."""
    fit = window // message_bytes
    over = min(settings.get("MAX_CONCURRENT_STREAMS", 2 ** 31 - 1), REPLAY_WINDOWS * -(-window // message_bytes))
    return (fit, over) if 0 < fit < over else ()


def _nghttp(port: int, path: str, body: Path, timeout_s: float, requests: int = 1) -> str | None:
    if not (nghttp := shutil.which("nghttp")):
        return None
    argv = [nghttp, "-v", "-n", "-m", str(requests), "-H", "content-type: application/grpc", "-H", "te: trailers",
            "-d", str(body), f"http://127.0.0.1:{port}{path}"]
    done = output(argv, timeout_s, stdin=subprocess.DEVNULL)
    return done.stdout if done else None


def h2_settings(port: int, path: str, body: Path, timeout_s: float = 5.0) -> dict | None:
    """The server's HTTP/2 settings and connection window (parse_nghttp), from one gRPC call, with the
    replays (parse_replay) when the window can run short; None when nghttp is missing or the call did not
    complete."""
    text = _nghttp(port, path, body, timeout_s)
    if not text or " recv HEADERS frame" not in text:
        return None
    h2 = parse_nghttp(text)
    message = body.stat().st_size
    replays = [(n, _nghttp(port, path, body, 2 * timeout_s, n))
               for n in replay_sizes(h2["settings"], h2["connection_window"], message)]
    if replays:
        h2["replays"] = [parse_replay(text, message) if text else {"requests": n, "message_bytes": message}
                         for n, text in replays]
    return h2
