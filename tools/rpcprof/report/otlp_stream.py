"""export --format otlp (protobuf) of a folded file, made as it is read: the same bytes as
report/export.to_otlp gives of the whole file (SerializeToString(deterministic=True)), without holding its stacks.

ProfilesData's fields are written by hand in the order the protobuf library serialises them: the resource's
profile (its sample type, then a sample per stack) and then the dictionary (the mapping, location, function, link,
string, attribute and stack tables, each led by its zero value). The samples, the stack table and the tables of
frames are kept encoded in scratch files, numbered as to_otlp numbers them (a stack's frames from its leaf, then
its labels' attributes, whose keys are strings of the table and whose values are not), and put together, each
message's length before it, once the file ends. Labels and leaves seen once are report/pprof_stream.py's.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from rpcprof.analyze.folded_blocks import Irregular, folded_rows
from rpcprof.analyze.once_leaves import leaf_counts
from rpcprof.analyze.rules import Rules
from rpcprof.report.pprof_stream import (_VT, LabelledRows, Unsure, _Labels, _Tables, encode_ids, field, labels_of,
                                         marked_strings, varint)


class _OtlpTables(_Tables):
    STRING = 0x2a            # ProfilesDictionary.string_table, field 5

    def __init__(self, counts: bytearray) -> None:
        super().__init__(counts)
        self.locs.write(b"\x12\x00")            # the zero values of location_table and function_table
        self.functions.write(b"\x1a\x00")

    def encode(self, loc: int, name: int) -> None:
        if name:
            n = varint(name)
            body = b"\x08" + n + b"\x10" + n
            self.functions.write(b"\x1a" + _VT[len(body)] + body)
        else:
            self.functions.write(b"\x1a\x00")
        line = b"\x08" + varint(loc)
        body = b"\x1a" + _VT[len(line)] + line
        self.locs.write(b"\x12" + _VT[len(body)] + body)


class _Attributes(_Labels):
    """A stack's labels as to_otlp's attribute indices (Sample field 2, packed), the attribute table encoded."""

    def __init__(self, rules: Rules, tables: _Tables) -> None:
        super().__init__(rules, tables)
        self.index: dict[tuple[str, str], int] = {}
        self.table = bytearray(b"\x32\x00")

    def encode(self, groups: tuple) -> bytes:
        found = self.encoded.get(groups)
        if found is None:
            labels = labels_of(groups)
            ids = b""
            for label in labels:
                i = self.index.get(label)
                if i is None:
                    i = self.index[label] = len(self.index) + 1
                    key = self.tables.s(label[0])
                    value = field(0x12, field(0x0a, label[1].encode("utf-8")))
                    self.table += field(0x32, (b"\x08" + varint(key) if key else b"") + value)
                ids += varint(i)
            found = self.encoded[groups] = field(0x12, ids)
        return found


def _copy(src, out) -> None:
    src.seek(0)
    while data := src.read(1 << 20):
        out.write(data)
    src.close()


class OtlpWriter:
    """to_otlp's protobuf ProfilesData, a block of folded rows at a time; write() puts it together."""

    def __init__(self, rules: Rules, sample_type: tuple[str, str], counts: bytearray) -> None:
        self.tables = t = _OtlpTables(counts)
        self.attributes = _Attributes(rules, t)
        kind, unit = t.s(sample_type[0]), t.s(sample_type[1])
        self.sample_type = field(0x0a, (b"\x08" + varint(kind) if kind else b"") + (b"\x10" + varint(unit) if unit else b""))
        self.samples, self.stack_table = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.stack_table.write(b"\x3a\x00")
        self.samples_size = 0
        self.rows = LabelledRows(rules, t, self.attributes, encode_ids)
        self.values: dict[str, bytes] = {}          # a count as written -> its packed values field
        self.stacks = 0

    def add_rows(self, rows: list[tuple[str, str, str]]) -> None:
        samples, stacks, n = [], [], self.stacks
        values = self.values if len(self.values) < 4096 else {}
        for leaf_id, callers_ids, tags, w in self.rows.rows(rows):
            n += 1
            stacks.append(field(0x3a, field(0x0a, varint(leaf_id) + callers_ids)))
            value = values.get(w)
            if value is None:
                value = values[w] = field(0x22, varint(int(w)))
            samples.append(field(0x12, b"\x08" + varint(n) + tags + value))
        data = b"".join(samples)
        self.samples.write(data)
        self.samples_size += len(data)
        self.stack_table.write(b"".join(stacks))
        self.stacks = n

    def write(self, out) -> None:
        """The whole ProfilesData to out (a binary file)."""
        t = self.tables
        scope = field(0x0a, field(0x0a, b"rpcprof"))
        profile_size = len(self.sample_type) + self.samples_size
        scope_profiles = scope + b"\x12" + varint(profile_size)
        scope_size = len(scope_profiles) + profile_size
        resource = b"\x12" + varint(scope_size)
        out.write(b"\x0a" + varint(len(resource) + scope_size) + resource + scope_profiles + self.sample_type)
        _copy(self.samples, out)
        sizes = [f.tell() for f in (t.locs, t.functions, t.strings, self.stack_table)]
        out.write(b"\x12" + varint(2 + 2 + sum(sizes) + len(self.attributes.table)) + b"\x0a\x00")
        for f in (t.locs, t.functions):
            _copy(f, out)
        out.write(b"\x22\x00")
        _copy(t.strings, out)
        out.write(bytes(self.attributes.table))
        _copy(self.stack_table, out)


def write_streamed(make_writer, folded: Path, rules: Rules, sample_type: tuple[str, str], out) -> int | None:
    """make_writer(rules, sample_type, leaf counts)'s document of a folded file written to out (binary), read a
    block at a time: the number of stacks; None, having written nothing, when it must be read whole (as
    pprof_stream's)."""
    try:
        writer = make_writer(rules, sample_type, leaf_counts(Path(folded), marked_strings(rules, sample_type)))
        for _, rows in folded_rows(Path(folded)):
            writer.add_rows(rows)
    except (Irregular, OSError, EOFError, Unsure):
        return None
    if not writer.rows.weighed:
        return None
    writer.write(out)
    return writer.stacks


def write_otlp(folded: Path, rules: Rules, sample_type: tuple[str, str], out) -> int | None:
    """to_otlp's protobuf of a folded file written to out (binary), read a block at a time (write_streamed)."""
    return write_streamed(OtlpWriter, folded, rules, sample_type, out)
