"""export --format pprof of a folded file, written as it is read (analyze/folded_blocks.py): the same bytes as
report/export.to_pprof gives of the whole file, without holding its stacks.

profile.proto's fields are written by hand in the order the protobuf library serialises them (field number
order: sample_type, the samples, the locations, the functions, the string table, the comment), each sample as
it is read; the locations, functions and strings, numbered in the order to_pprof numbers them (a stack's frames
from its leaf, then its labels), are kept as their encoded bytes until the samples end. The gzip stream is
zlib's at export.GZIP_LEVEL with a gzip header (gzip.compress with mtime=0), fed a block at a time, on a thread of its
own (Compressor).

A sample's labels come from the walk report.py table makes (analyze/stack_walk.py), one per question (the
category, the sub-category, the tax group): a run of leaves that no rule matches takes its callers' labels,
encoded once per distinct callers; any other stack is asked as Rules.classify_stack would answer it.
"""
from __future__ import annotations

import queue
import tempfile
import threading
import zlib
from array import array
from pathlib import Path

from rpcprof.analyze.callers_groups import CallersGroups
from rpcprof.analyze.folded_blocks import Irregular, folded_rows, leaf_filter
from rpcprof.analyze.once_leaves import ONCE_BITS, leaf_counts
from rpcprof.analyze.rules import CACHE_LIMIT, Rules, remember
from rpcprof.analyze.stack_walk import ROWS_AT_ONCE, _Tally
from rpcprof.report.export import GZIP_LEVEL

def _slow_varint(n: int) -> bytes:
    out = bytearray()
    while n >= 128:
        out.append(n & 127 | 128)
        n >>= 7
    out.append(n)
    return bytes(out)


SMALL = 1 << 14
_VT = [_slow_varint(i) for i in range(SMALL)]   # the varints of one and two bytes, made once
_TAGS = [bytes([i]) for i in range(256)]
_LOW = [bytes([i | 128]) for i in range(128)]   # a varint's leading bytes: 7 bits and "more follows"


def _varint(n: int) -> bytes:
    """n >= SMALL as a varint: its low 14 bits, then the varint of the rest (from the table below 2^28)."""
    if n < 1 << 28:
        return _LOW[n & 127] + _LOW[n >> 7 & 127] + _VT[n >> 14]
    return _slow_varint(n)


def varint(n: int) -> bytes:
    """n (0 <= n < 2^64) as a protobuf varint."""
    return _VT[n] if n < SMALL else _varint(n)


def field(tag: int, body: bytes) -> bytes:
    """A length-delimited field: its tag byte, its length, its bytes."""
    n = len(body)
    return _TAGS[tag] + (_VT[n] if n < SMALL else _varint(n)) + body


class Unsure(Exception):
    """A string may be a frame the tables did not keep: make the profile in memory instead."""


def marked_strings(rules: Rules, sample_type: tuple[str, str], *more: str) -> list[str]:
    """The strings a profile names besides its frames (the labels' keys and values, the sample type, more),
    which leaf_counts (analyze/once_leaves.py) keeps apart from the leaves."""
    groups = {g for r in (rules, rules.using(level=2), rules.using(view="tax")) for g in r.all_categories}
    return ["", *sample_type, *more, "category", "subcategory", "tax", *groups]


class Spool:
    """A scratch file whose writes are gathered in a list (write is the list's append) and written at once by
    flush(), which LabelledRows.rows calls after each block; seek, truncate and tell flush first."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()
        self.parts: list[bytes] = []
        self.write = self.parts.append

    def flush(self) -> None:
        self.file.write(b"".join(self.parts))
        self.parts.clear()

    def seek(self, offset: int) -> int:
        self.flush()
        return self.file.seek(offset)

    def truncate(self) -> int:
        self.flush()
        return self.file.truncate()

    def tell(self) -> int:
        self.flush()
        return self.file.tell()

    def read(self, size: int) -> bytes:
        return self.file.read(size)

    def close(self) -> None:
        self.file.close()


class _Tables:
    """The string, function and location tables, numbered as to_pprof numbers them, kept encoded."""

    STRING = 0x32            # the string table's tag (profile.proto's field 6)

    def __init__(self, counts: bytearray) -> None:
        self.counts, self.mask = counts, (1 << ONCE_BITS) - 1
        self.others: dict[str, int] = {"": 0}     # strings that are not (yet) a frame's name
        self.locations: dict[str, int] = {}        # frame -> its location and function id
        self.name_of = array("q")                  # location id - 1 -> its frame's string index
        self.count = 1                             # strings so far
        # the tables' encoded bytes, in scratch files until the samples end
        self.strings, self.functions, self.locs = Spool(), Spool(), Spool()
        self.strings.write(bytes([self.STRING, 0]))
        self._string_tag = _TAGS[self.STRING]

    def flush(self) -> None:
        for spool in (self.strings, self.functions, self.locs):
            spool.flush()

    def s(self, text: str) -> int:
        """The string index of text, a new one at its end when not there yet."""
        i = self.others.get(text)
        if i is None:
            loc = self.locations.get(text)
            if loc is not None:
                return self.name_of[loc - 1]
            if self.counts[hash(text) & self.mask] == 1:
                raise Unsure
            i = self.others[text] = self._add(text)
        return i

    def _add(self, text: str) -> int:
        i = self.count
        self.count += 1
        data = text.encode("utf-8")
        n = len(data)
        self.strings.write(self._string_tag + (_VT[n] if n < SMALL else _varint(n)) + data)
        return i

    def leaf(self, frame: str) -> int:
        """The location id of a leaf frame: one seen once in the file is numbered without being kept."""
        if self.counts[hash(frame) & self.mask] != 1:
            return self.location(frame)
        loc = len(self.name_of) + 1
        self._new(loc, self._add(frame))
        return loc

    def location(self, frame: str) -> int:
        """The location (and function) id of a frame, new ones numbered on."""
        loc = self.locations.get(frame)
        if loc is not None:
            return loc
        name = self.others.pop(frame, None)
        if name is None:
            name = self._add(frame)
        elif frame == "":
            self.others[""] = 0
        loc = len(self.name_of) + 1
        self.locations[frame] = loc
        self._new(loc, name)
        return loc

    def _new(self, loc: int, name: int) -> None:
        self.name_of.append(name)
        self.encode(loc, name)

    def encode(self, loc: int, name: int) -> None:
        """A new frame's function and location, written to their tables."""
        v = _VT[loc] if loc < SMALL else _varint(loc)
        if name:
            n = _VT[name] if name < SMALL else _varint(name)
            body = b"\x08" + v + b"\x10" + n + b"\x18" + n
        else:
            body = b"\x08" + v
        self.functions.write(b"\x2a" + _VT[len(body)] + body)
        line = b"\x08" + v
        body = line + b"\x22" + _VT[len(line)] + line
        self.locs.write(b"\x22" + _VT[len(body)] + body)


def labels_of(groups: tuple) -> list[tuple[str, str]]:
    """A stack's (category, sub-category[, tax group]) as its labels: the sub-category only where it is one."""
    labels = [("category", groups[0])]
    if "/" in groups[1]:
        labels.append(("subcategory", groups[1]))
    if len(groups) > 2:
        labels.append(("tax", groups[2]))
    return labels


class _Labels:
    """A stack's labels (category, subcategory, tax), as to_pprof's labels_of gives them, encoded."""

    def __init__(self, rules: Rules, tables: _Tables) -> None:
        self.tallies = [_Tally(rules, False), _Tally(rules.using(level=2), False)]
        if rules.tax_groups:
            self.tallies.append(_Tally(rules.using(view="tax"), False))
        self.tables = tables
        self.encoded: dict[tuple, bytes] = {}
        self.callers_groups = CallersGroups(self.tallies)

    def of_stack(self, stack: str) -> bytes:
        return self.encode(tuple(t.answer(stack)[0] for t in self.tallies))

    def of_callers(self, callers: str) -> bytes:
        """The labels of a stack under callers `a;b;` whose leaf answers no question."""
        return self.encode(self.callers_groups.groups(callers))

    def encode(self, groups: tuple) -> bytes:
        found = self.encoded.get(groups)
        if found is None:
            labels = labels_of(groups)
            s = self.tables.s
            found = b"".join(field(0x1a, (b"\x08" + varint(k) if k else b"") + (b"\x10" + varint(v) if v else b""))
                             for k, v in ((s(key), s(value)) for key, value in labels))
            self.encoded[groups] = found
        return found


class Compressor:
    """gzip.compress(data, GZIP_LEVEL, mtime=0) of the data written, in order, on a thread of its own: zlib lets go of the
    GIL while it compresses, so the next block is encoded meanwhile (the same bytes: one zlib stream)."""

    def __init__(self) -> None:
        self.z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        self.out: list[bytes] = []
        self.queue: queue.Queue = queue.Queue(maxsize=4)
        self.failed: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while (data := self.queue.get()) is not None:
                chunk = self.z.compress(data)
                if chunk:
                    self.out.append(chunk)
        except BaseException as e:          # noqa: BLE001 - given to close(), in the caller's thread
            self.failed = e
            while self.queue.get() is not None:
                pass

    def write(self, data: bytes) -> None:
        self.queue.put(data)

    def close(self) -> list[bytes]:
        """The compressed chunks, the stream ended."""
        self.queue.put(None)
        self.thread.join()
        if self.failed:
            raise self.failed
        self.out.append(self.z.flush())
        return self.out

    def abandon(self) -> None:
        self.queue.put(None)


class LabelledRows:
    """What the stream writers (pprof, OTLP, OTLP's JSON) share: the leaf filter, each caller text's location
    ids (leaf first, encoded by encode_ids) and labels, asked once, and whether any row weighed anything."""

    def __init__(self, rules: Rules, tables, labels, encode_ids) -> None:
        self.tables, self.labels, self.encode_ids = tables, labels, encode_ids
        self.filter = leaf_filter(rules.rules + rules.tax_rules + rules.waits.rules)
        self.callers: dict[str, list] = {}       # callers `a;b;` -> [their location ids leaf-first, encoded; labels]
        self.weighed = False

    def _callers(self, callers: str) -> list:
        known = self.callers.get(callers)
        if known is None:
            location = self.tables.location
            ids = self.encode_ids([location(f) for f in reversed(callers[:-1].split(";"))] if callers else [])
            known = remember(self.callers, callers, [ids, None])
        return known

    def rows(self, rows: list[tuple[str, str, str]]):
        """(its leaf's location id, its callers' ids encoded, its labels, its count as written) of each of
        folded_rows' rows, in order; the leaf is numbered before its callers, as the whole-file path does."""
        leaf_of, callers_of, labels, none_match = self.tables.leaf, self._callers, self.labels, self.filter.none_match
        for i in range(0, len(rows), ROWS_AT_ONCE):
            run = rows[i:i + ROWS_AT_ONCE]
            plain = none_match("\n".join([leaf for _, leaf, _ in run]))
            for callers, leaf, w in run:
                leaf_id = leaf_of(leaf)
                known = callers_of(callers)
                if plain and callers:
                    tags = known[1]
                    if tags is None:
                        tags = known[1] = labels.of_callers(callers)
                else:
                    tags = labels.of_stack(callers + leaf)
                yield leaf_id, known[0], tags, w
        self.tables.flush()
        self.weighed = self.weighed or any(map(int, {w for _, _, w in rows}))


def encode_ids(ids: list[int]) -> bytes:
    return b"".join([varint(i) for i in ids])


class PprofWriter:
    """A gzip'd profile.proto made a block of folded rows at a time; finish() gives its bytes."""

    def __init__(self, rules: Rules, sample_type: tuple[str, str], app: str | None, counts: bytearray) -> None:
        from rpcprof.pprof_in import APP_COMMENT
        self.tables = t = _Tables(counts)
        self.labels = _Labels(rules, t)
        self.gzip = Compressor()
        kind, unit = t.s(sample_type[0]), t.s(sample_type[1])
        head = field(0x0a, (b"\x08" + varint(kind) if kind else b"") + (b"\x10" + varint(unit) if unit else b""))
        self.comment = field(0x6a, varint(t.s(APP_COMMENT + app))) if app else b""
        self._write(head)
        self.rows = LabelledRows(rules, t, self.labels, encode_ids)
        self.values: dict[str, bytes] = {}
        self.stacks = 0

    def _write(self, data: bytes) -> None:
        self.gzip.write(data)

    def add_rows(self, rows: list[tuple[str, str, str]]) -> None:
        """folded_rows' rows, in their order, as samples."""
        values, parts = self.values, []
        for leaf_id, callers_ids, tags, w in self.rows.rows(rows):
            ids = varint(leaf_id) + callers_ids
            value = values.get(w)
            if value is None:
                value = field(0x12, varint(int(w)))
                if len(values) < CACHE_LIMIT:
                    values[w] = value
            n = len(ids)
            body = b"\x0a" + (_VT[n] if n < SMALL else _varint(n)) + ids + value + tags
            n = len(body)
            parts.append(b"\x12" + (_VT[n] if n < SMALL else _varint(n)) + body)
        self._write(b"".join(parts))
        self.stacks += len(rows)

    def finish(self) -> list[bytes]:
        """The whole gzip'd profile, as chunks."""
        t = self.tables
        for table in (t.locs, t.functions, t.strings):
            table.seek(0)
            while data := table.read(1 << 20):
                self._write(data)
            table.close()
        self._write(self.comment)
        return self.gzip.close()


def to_pprof_blocks(folded: Path, rules: Rules, sample_type: tuple[str, str], app: str | None):
    """(the gzip'd profile's chunks, stacks) of a folded file, as to_pprof writes it, read a block at a time;
    None when it must be read whole (a line the block reader does not take, an unreadable file, no weight)."""
    from rpcprof.pprof_in import APP_COMMENT
    try:
        counts = leaf_counts(Path(folded), marked_strings(rules, sample_type, APP_COMMENT + (app or "")))
    except (Irregular, OSError, EOFError):
        return None
    writer = PprofWriter(rules, sample_type, app, counts)
    try:
        for _, rows in folded_rows(Path(folded)):
            writer.add_rows(rows)
    except (Irregular, OSError, EOFError, Unsure):
        writer.gzip.abandon()
        return None
    except BaseException:
        writer.gzip.abandon()
        raise
    if not writer.rows.weighed:
        writer.gzip.abandon()
        return None
    return writer.finish(), writer.stacks
