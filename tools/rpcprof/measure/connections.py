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
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ESTABLISHED = "01"
H2_INITIAL_WINDOW = 65_535      # RFC 9113 6.5.2 / 6.9.2: each stream's and the connection's window


def established(port: int, tables=(Path("/proc/net/tcp"), Path("/proc/net/tcp6"))) -> int:
    """Connections in ESTABLISHED state whose local port is port."""
    want = f":{port:04X}"
    n = 0
    for table in tables:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[1].endswith(want) and fields[3] == ESTABLISHED:
                n += 1
    return n


_SETTING = re.compile(r"\[SETTINGS_(\w+)\(0x[0-9a-f]+\):(\d+)\]")
_FRAME = re.compile(r"^\[\s*[\d.]+\] (recv|send) (\w+) frame <length=\d+, flags=0x[0-9a-f]+, stream_id=(\d+)>")
_INCREMENT = re.compile(r"\(window_size_increment=(\d+)\)")


def parse_nghttp(text: str) -> dict:
    """What the server sent before the call's reply, from `nghttp -v` output: {settings: {NAME: value},
    connection_window: bytes (65,535 plus every WINDOW_UPDATE on stream 0 received before the reply's
    HEADERS)}."""
    settings: dict[str, int] = {}
    window = H2_INITIAL_WINDOW
    frame = None
    for line in text.splitlines():
        m = _FRAME.match(line)
        if m:
            frame = (m.group(1), m.group(2), int(m.group(3)))
            if frame[0] == "recv" and frame[1] == "HEADERS":
                break
            continue
        if frame and frame[0] == "recv" and frame[1] == "SETTINGS":
            for name, value in _SETTING.findall(line):
                settings[name] = int(value)
        elif frame and frame[:2] == ("recv", "WINDOW_UPDATE") and frame[2] == 0:
            m = _INCREMENT.search(line)
            if m:
                window += int(m.group(1))
    return {"settings": settings, "connection_window": window}


def h2_settings(port: int, path: str, body: Path, timeout_s: float = 5.0) -> dict | None:
    """The server's HTTP/2 settings and connection window (parse_nghttp), from one gRPC call; None when
    nghttp is missing or the call did not complete."""
    nghttp = shutil.which("nghttp")
    if not nghttp:
        return None
    argv = [nghttp, "-v", "-n", "-H", "content-type: application/grpc", "-H", "te: trailers", "-d", str(body),
            f"http://127.0.0.1:{port}{path}"]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if " recv HEADERS frame" not in out.stdout:
        return None
    return parse_nghttp(out.stdout)
