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

from rpcprof.analyze.folded_blocks import Irregular, LeafFilter, folded_rows
from rpcprof.analyze.rules import Rules
from rpcprof.analyze.stack_walk import ROWS_AT_ONCE
from rpcprof.report.pprof_stream import _VT, Unsure, _Labels, _Tables, field, leaf_counts, varint


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
            labels = [("category", groups[0])]
            if "/" in groups[1]:
                labels.append(("subcategory", groups[1]))
            if len(groups) > 2:
                labels.append(("tax", groups[2]))
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
        r = rules
        self.filter = LeafFilter(r.rules + r.tax_rules + r.waits.rules)
        self.callers: dict[str, list] = {}
        self.values: dict[str, bytes] = {}          # a count as written -> its packed values field
        self.total = self.stacks = 0

    def add_rows(self, rows: list[tuple[str, str, str]]) -> None:
        leaf_of, labels, callers_of = self.tables.leaf, self.attributes, self._callers
        samples, stacks, n = [], [], self.stacks
        values = self.values if len(self.values) < 4096 else {}
        for i in range(0, len(rows), ROWS_AT_ONCE):
            run = rows[i:i + ROWS_AT_ONCE]
            plain = self.filter.none_match("\n".join([leaf for _, leaf, _ in run]))
            for callers, leaf, w in run:
                ids = varint(leaf_of(leaf))
                known = callers_of(callers)
                ids += known[0]
                if plain and callers:
                    tags = known[1]
                    if tags is None:
                        tags = known[1] = labels.of_callers(callers)
                else:
                    tags = labels.of_stack(callers + leaf)
                n += 1
                stacks.append(field(0x3a, field(0x0a, ids)))
                value = values.get(w)
                if value is None:
                    value = values[w] = field(0x22, varint(int(w)))
                samples.append(field(0x12, b"\x08" + varint(n) + tags + value))
        data = b"".join(samples)
        self.samples.write(data)
        self.samples_size += len(data)
        self.stack_table.write(b"".join(stacks))
        self.stacks = n
        self.total += sum(map(int, {w for _, _, w in rows}))

    def _callers(self, callers: str) -> list:
        from rpcprof.analyze.rules import remember
        known = self.callers.get(callers)
        if known is None:
            location = self.tables.location
            ids = b"".join([varint(location(f)) for f in reversed(callers[:-1].split(";"))]) if callers else b""
            known = remember(self.callers, callers, [ids, None])
        return known

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


def write_otlp(folded: Path, rules: Rules, sample_type: tuple[str, str], out) -> int | None:
    """to_otlp's protobuf of a folded file written to out (binary), read a block at a time: the number of
    stacks; None, having written nothing, when it must be read whole (as pprof_stream's)."""
    groups = {g for r in (rules, rules.using(level=2), rules.using(view="tax")) for g in r.all_categories}
    marked = ["", *sample_type, "category", "subcategory", "tax", *groups]
    try:
        writer = OtlpWriter(rules, sample_type, leaf_counts(Path(folded), marked))
        for _, rows in folded_rows(Path(folded)):
            writer.add_rows(rows)
    except (Irregular, OSError, EOFError, Unsure):
        return None
    if not writer.total:
        return None
    writer.write(out)
    return writer.stacks
