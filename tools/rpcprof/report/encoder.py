"""export's compiled encoder (tools/encode, which tools/setup.sh builds into the virtualenv as rpcprof-encode):
the pprof profile, the OTLP profile (protobuf) and the speedscope document of a folded file (gzip'd or not),
the same bytes as report/pprof_stream.py, otlp_stream.py and speedscope_stream.py write, in a fraction of their
time. It reads the file itself, numbers the frames and strings and encodes every stack; what it cannot know, each
stack's labels (the category, sub-category and tax group report.py's rules give it), it reads from its stdin as
this module asks them, a block of rows at a time, on the other CPU meanwhile.

Each function gives None when the encoder is not there (or RPCPROF_NO_ENCODER is set, to time the Python
writers) or refuses the file (a line folded_blocks does not take, no weight): export then drops what it wrote
and writes the file its own way, which says what is wrong with it. An OSError the encoder met writing is raised
here (export names the file). The encoder is stopped (by PID) on every way out.
"""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from array import array
from pathlib import Path

from rpcprof.analyze.folded_blocks import Irregular, folded_rows, leaf_filter
from rpcprof.analyze.rules import Rules, remember
from rpcprof.analyze.stack_walk import NEUTRAL, ROWS_AT_ONCE
from rpcprof.paths import ENCODER, encoder_ready
from rpcprof.report.export import GZIP_LEVEL
from rpcprof.report.pprof_stream import _Labels, labels_of

CANNOT_WRITE = 4      # its exit status for an output it cannot write (the OS's error on its one line of stderr);
                      # any other but 0 (3: a file it does not take) leaves the file to the Python writers


def available() -> bool:
    return encoder_ready()


class LabelSets(_Labels):
    """Each stack's labels as the number of their set, each new set's record (`L`, labels.rs) kept in `new`."""

    def __init__(self, rules: Rules) -> None:
        super().__init__(rules, None)
        self.numbers: dict[tuple, int] = {}
        self.by_callers: dict[str, int] = {}
        self.by_leaf: dict[str, int] = {}         # a leaf that decides every question alone -> its stacks' set
        self.neutral: dict[str, None] = {}        # a leaf that answers no question: its stacks take their callers'
        self.new: list[bytes] = []

    def of_stack(self, stack: str) -> int:
        n = super().of_stack(stack)
        leaf = stack[stack.rfind(";") + 1:]
        answers = [t.answers.by_leaf.get(leaf) for t in self.tallies]
        if all(a is NEUTRAL for a in answers):
            remember(self.neutral, leaf, None)
        elif all(isinstance(a, tuple) and a is not NEUTRAL for a in answers):
            remember(self.by_leaf, leaf, n)
        return n

    def encode(self, groups: tuple) -> int:
        n = self.numbers.get(groups)
        if n is None:
            n = self.numbers[groups] = len(self.numbers) + 1       # from 1: a number is never falsy
            labels = labels_of(groups)
            record = b"L" + struct.pack("<II", n, len(labels))
            for pair in labels:
                for data in (text.encode("utf-8") for text in pair):
                    record += struct.pack("<I", len(data)) + data
            self.new.append(record)
        return n

    def of_callers(self, callers: str) -> int:
        n = self.by_callers.get(callers)
        if n is None:
            n = remember(self.by_callers, callers, super().of_callers(callers))
        return n


def _send_labels(folded: Path, rules: Rules, stdin) -> int:
    """Every stack's label set, a block of rows at a time, to the encoder's stdin: the stacks (whether any
    weighs anything, the encoder checks). Irregular as folded_rows raises it; BrokenPipeError when the encoder
    has stopped."""
    sets = LabelSets(rules)
    none_match = leaf_filter(rules.rules + rules.tax_rules + rules.waits.rules).none_match
    of_stack, of_callers, known, decided = sets.of_stack, sets.of_callers, sets.by_callers.get, sets.by_leaf.get
    neutral = sets.neutral
    stacks = 0
    for _, rows in folded_rows(folded):
        ids = array("I")
        # a block whose leaves no rule matches at once, as one run; else runs of ROWS_AT_ONCE, as the table's walk
        whole = none_match("\n".join([leaf for _, leaf, _ in rows]))
        step = len(rows) if whole else ROWS_AT_ONCE
        for i in range(0, len(rows), step):
            run = rows[i:i + step]
            if whole or none_match("\n".join([leaf for _, leaf, _ in run])):
                ids.extend([known(c) or (of_callers(c) if c else of_stack(leaf)) for c, leaf, _ in run])
            else:
                ids.extend([decided(leaf) or (known(c) or of_callers(c) if c and leaf in neutral else of_stack(c + leaf))
                            for c, leaf, _ in run])
        if sys.byteorder == "big":
            ids.byteswap()
        stdin.write(b"".join(sets.new) + b"R" + struct.pack("<I", len(ids)) + ids.tobytes())
        sets.new.clear()
        stacks += len(rows)
    return stacks


class _Run:
    """One run of the encoder, stopped on the way out of the with block whatever happens."""

    def __init__(self, args: list[str], stdin, stdout) -> None:
        self.proc = subprocess.Popen([str(ENCODER), *args], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)

    def __enter__(self) -> subprocess.Popen:
        return self.proc

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


def _ended(proc: subprocess.Popen) -> bool:
    """True when the encoder wrote its document (its stderr then `stacks N`); False when it refused the file;
    the OSError it met writing."""
    status = proc.wait()
    if status == 0:
        return True
    why = proc.stderr.read().decode("utf-8", "replace").strip()
    if status == CANNOT_WRITE:
        errno = re.search(r"os error (\d+)", why)
        raise OSError(int(errno.group(1)), os.strerror(int(errno.group(1)))) if errno else OSError(why)
    return False


def _labelled(fmt: str, folded: Path, rules: Rules, args: list[str], out) -> int | None:
    """The encoder's fmt document of folded to out (a binary file), the labels sent from here: the stacks, or
    None when it refused the file (or the file is not what folded_rows takes)."""
    if not takes(folded):
        return None
    out.flush()
    try:
        with _Run([fmt, str(folded), *args], subprocess.PIPE, out) as proc:
            try:
                stacks = _send_labels(folded, rules, proc.stdin)
                proc.stdin.close()
            except BrokenPipeError:
                stacks = None
            return stacks if _ended(proc) else None
    except (Irregular, ValueError, EOFError):
        return None


def write_pprof(folded: Path, rules: Rules, sample_type: tuple[str, str], app: str | None, out) -> int | None:
    """pprof_stream.to_pprof_blocks's gzip'd profile of folded written to out (a binary file): the stacks; None
    when the encoder is not there or refused the file (out then holds what it wrote: drop it)."""
    from rpcprof.pprof_in import APP_COMMENT
    return _labelled("pprof", folded, rules, [*sample_type, str(GZIP_LEVEL), *([APP_COMMENT + app] if app else [])],
                     out)


def write_otlp(folded: Path, rules: Rules, sample_type: tuple[str, str], out) -> int | None:
    """otlp_stream.write_otlp's document of folded written to out (a binary file): the stacks; None, having
    written nothing, when the encoder is not there or refused the file."""
    return _labelled("otlp", folded, rules, list(sample_type), out)


def write_speedscope(folded: Path, name: str, sample_type: tuple[str, str], out) -> int | None:
    """speedscope_stream.write_speedscope's document of folded written to out (a binary file): the stacks; None,
    having written nothing, when the encoder is not there or refused the file."""
    if not takes(folded):
        return None
    out.flush()
    unit = "nanoseconds" if sample_type[1] == "nanoseconds" else "none"
    try:
        with _Run(["speedscope", str(folded), json.dumps(name), unit], subprocess.DEVNULL, out) as proc:
            if not _ended(proc):
                return None
            return int(proc.stderr.read().split()[-1])
    except ValueError:
        return None


class OneSide:
    """The encoder's frames on one side only of two folded files (report/diff_stream.py's), started at once to
    run beside report.py's reading of the same files; result() waits for it. It writes into scratch: NAMES, every
    frame on one side only (`a\\tNAME` or `b\\tNAME` a line), VANISHED, A's lines that hold one of A's, and
    MERGED, the lines the diff is drawn from (A normalised to B's total or not), when both files' lines are drawn
    the way report.py draws them (printable ASCII: its result's "merged")."""

    NAMES, VANISHED, MERGED = "one_side.names", "vanished.folded", "diff.folded"

    def __init__(self, a: Path, b: Path, scratch: Path, listed: int, normalize: bool) -> None:
        self.scratch = scratch
        self.run = _Run(["one-side", str(a), str(b), str(listed), str(scratch / self.NAMES),
                         str(scratch / self.VANISHED), str(scratch / self.MERGED), "normalize" if normalize else "raw"],
                        subprocess.DEVNULL, subprocess.PIPE)
        self.found: dict | None = None
        self.ended = False

    def done(self) -> bool:
        """Whether the encoder has ended (result() then does not wait)."""
        return self.ended or self.run.proc.poll() is not None

    def result(self) -> dict | None:
        """{"a", "b": {"count": frames on that side only, "frames": [[name, share (0-1)]] the largest},
        "merged": whether MERGED was written}; None when the encoder refused the files (report.py then finds
        them its own way)."""
        if not self.ended:
            with self.run as proc:
                out = proc.stdout.read()
                self.found = json.loads(out) if _ended(proc) else None
            self.ended = True
        return self.found

    def stop(self) -> None:
        self.run.__exit__()

    def names(self, side: str):
        """Every frame on side ("a" or "b") only, read from NAMES a line at a time."""
        with open(self.scratch / self.NAMES, encoding="utf-8", newline="\n") as f:
            for line in f:
                if line[0] == side:
                    yield line[2:-1]


def scan(folded: Path) -> tuple[int, int, int] | None:
    """(total count, their gcd, stacks) of a folded file, as diff_stream.scan sums them; None when the encoder
    refused it."""
    try:
        with _Run(["scan", str(folded)], subprocess.DEVNULL, subprocess.PIPE) as proc:
            out = proc.stdout.read()
            return tuple(map(int, out.split())) if _ended(proc) else None
    except ValueError:
        return None


def takes(*folded: Path) -> bool:
    """Whether the encoder is there and these files are."""
    return available() and all(Path(f).is_file() for f in folded)
