"""A SocketSampler log (measure/sockets.py) read back: each sample's connection ends and their tcp_info
fields as ss prints them (notsent, unacked, cwnd, mss, rtt, minrtt, ato, lastsnd, lastrcv, lastack...)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_ADDR_LINE = re.compile(r"^(\d+)\s+(\d+)\s+(\S+):(\d+)\s+(\S+):(\d+)")
_FIELD = re.compile(r"\b(unacked|notsent|cwnd|mss|rtt|minrtt|ato|lastsnd|lastrcv|lastack|retrans|bytes_acked)"
                    r":([\d.]+)(?:/([\d.]+))?")


@dataclass
class Sock:
    """One connection end in one sample."""
    local_port: int
    peer_port: int
    info: dict[str, float] = field(default_factory=dict)

    def get(self, key: str, default: float = 0.0) -> float:
        return self.info.get(key, default)


def parse_log(text: str) -> list[tuple[float, list[Sock]]]:
    """(time, sockets) per sample of a SocketSampler log."""
    samples: list[tuple[float, list[Sock]]] = []
    sock: Sock | None = None
    for line in text.splitlines():
        if line.startswith("# t="):
            samples.append((float(line[4:]), []))
            sock = None
            continue
        if not samples:
            continue
        m = _ADDR_LINE.match(line.strip())
        if m and not line[:1].isspace():
            sock = Sock(int(m.group(4)), int(m.group(6)))
            samples[-1][1].append(sock)
        elif sock is not None:
            for key, value, _ in _FIELD.findall(line):
                sock.info[key] = float(value)
    return samples
