"""export --format otlp -o FILE.json of a folded file, made as it is read: the same bytes as report/export.to_otlp
gives of the whole file (json_format.MessageToJson, sort_keys, no indent), without holding its stacks.

The document is OTLP's JSON mapping of the ProfilesData report/otlp_stream.py writes as protobuf: keys in
lowerCamelCase and sorted (the dictionary's tables first, then resourceProfiles), 64-bit integers as strings,
fields at their zero value left out, strings as json.dumps writes them (ASCII, escaped). Each table and the
samples are kept as their JSON text in scratch files and put together once the file ends.
"""
from __future__ import annotations

import tempfile
from json.encoder import encode_basestring_ascii
from pathlib import Path

from rpcprof.analyze.rules import Rules
from rpcprof.report.otlp_stream import write_streamed
from rpcprof.report.pprof_stream import LabelledRows, _Labels, _Tables, labels_of


def _names(name: int) -> bytes:
    return f', {{"nameStrindex": {name}, "systemNameStrindex": {name}}}'.encode() if name else b", {}"


class _JsonTables(_Tables):
    """The string, function and location tables as their JSON lists' text, less the brackets."""

    def __init__(self, counts: bytearray) -> None:
        super().__init__(counts)
        for f, zero in ((self.strings, b'""'), (self.locs, b"{}"), (self.functions, b"{}")):
            f.seek(0)
            f.truncate()
            f.write(zero)

    def _add(self, text: str) -> int:
        i = self.count
        self.count += 1
        self.strings.write(b", " + encode_basestring_ascii(text).encode("ascii"))
        return i

    def encode(self, loc: int, name: int) -> None:
        self.functions.write(_names(name))
        self.locs.write(f', {{"lines": [{{"functionIndex": {loc}}}]}}'.encode())


class _JsonAttributes(_Labels):
    """A stack's labels as the text `"attributeIndices": [i, j], ` of its sample; the attribute table's text."""

    def __init__(self, rules: Rules, tables: _Tables) -> None:
        super().__init__(rules, tables)
        self.index: dict[tuple[str, str], int] = {}
        self.table = ["{}"]

    def encode(self, groups: tuple) -> str:
        found = self.encoded.get(groups)
        if found is None:
            labels = labels_of(groups)
            ids = []
            for label in labels:
                i = self.index.get(label)
                if i is None:
                    i = self.index[label] = len(self.index) + 1
                    key = self.tables.s(label[0])
                    value = f'"value": {{"stringValue": {encode_basestring_ascii(label[1])}}}'
                    self.table.append("{" + (f'"keyStrindex": {key}, ' if key else "") + value + "}")
                ids.append(str(i))
            found = self.encoded[groups] = f'{{"attributeIndices": [{", ".join(ids)}], '
        return found


class OtlpJsonWriter:
    """to_otlp's JSON ProfilesData, a block of folded rows at a time; write() puts it together."""

    def __init__(self, rules: Rules, sample_type: tuple[str, str], counts: bytearray) -> None:
        self.tables = t = _JsonTables(counts)
        self.attributes = _JsonAttributes(rules, t)
        kind, unit = t.s(sample_type[0]), t.s(sample_type[1])
        self.sample_type = "{" + ", ".join(([f'"typeStrindex": {kind}'] if kind else [])
                                           + ([f'"unitStrindex": {unit}'] if unit else [])) + "}"
        self.samples, self.stack_table = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.stack_table.write(b"{}")
        self.rows = LabelledRows(rules, t, self.attributes, encode_ids)
        self.stacks = 0

    def add_rows(self, rows: list[tuple[str, str, str]]) -> None:
        samples, stacks, n = [], [], self.stacks
        for leaf_id, callers_ids, tags, w in self.rows.rows(rows):
            n += 1
            stacks.append(f', {{"locationIndices": [{leaf_id}{callers_ids}]}}')
            samples.append(f'{tags}"stackIndex": {n}, "values": ["{int(w)}"]}}')
        self.samples.write(((", " if self.stacks else "") + ", ".join(samples)).encode())
        self.stack_table.write("".join(stacks).encode())
        self.stacks = n

    def write(self, out) -> None:
        """The whole document to out (a binary file)."""
        t = self.tables
        parts = [b'{"dictionary": {"attributeTable": [', ", ".join(self.attributes.table).encode(),
                 b'], "functionTable": [', t.functions, b'], "linkTable": [{}], "locationTable": [', t.locs,
                 b'], "mappingTable": [{}], "stackTable": [', self.stack_table, b'], "stringTable": [', t.strings,
                 b']}, "resourceProfiles": [{"scopeProfiles": [{"profiles": [{"sampleType": '
                 + self.sample_type.encode() + b', "samples": [', self.samples,
                 b']}], "scope": {"name": "rpcprof"}}]}]}\n']
        for part in parts:
            if isinstance(part, bytes):
                out.write(part)
                continue
            part.seek(0)
            while data := part.read(1 << 20):
                out.write(data)
            part.close()


def encode_ids(ids: list[int]) -> str:
    return "".join([f", {i}" for i in ids])


def write_otlp_json(folded: Path, rules: Rules, sample_type: tuple[str, str], out) -> int | None:
    """to_otlp's JSON of a folded file written to out (binary), read a block at a time (write_streamed)."""
    return write_streamed(OtlpJsonWriter, folded, rules, sample_type, out)
