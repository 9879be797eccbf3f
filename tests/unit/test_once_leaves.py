"""analyze/once_leaves.leaf_counts counts a file in two halves at once (the second in a forked child) with the
counts a whole pass gives, and folded_rows reads a part of a file as the lines it holds."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze import once_leaves
from rpcprof.analyze.folded_blocks import Irregular, folded_rows, halfway

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz"))
MARKED = ["", "cpu", "nanoseconds", "category", "leaf_7"]


def plain(capture: Path, tmp_path: Path) -> Path:
    """A capture unzipped, as a file that can be read in parts."""
    out = tmp_path / capture.name.removesuffix(".gz")
    with gzip.open(capture, "rb") as f, open(out, "wb") as o:
        shutil.copyfileobj(f, o)
    return out


def rows_of(path: Path, start: int = 0, stop: int | None = None) -> list:
    return [row for _, rows in folded_rows(path, start, stop) for row in rows]


def counts(path: Path, monkeypatch, halves: bool) -> bytearray:
    monkeypatch.setattr(once_leaves, "HALVES_FROM", 1 if halves else 1 << 62)
    return once_leaves.leaf_counts(path, MARKED)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name.split(".")[0])
def test_the_two_halves_are_the_files_lines(capture, tmp_path):
    path = plain(capture, tmp_path)
    half = halfway(path, 1)
    assert half and path.read_bytes()[half - 1:half] == b"\n"
    assert rows_of(path, 0, half) + rows_of(path, half) == rows_of(path)


@pytest.mark.parametrize("capture", CAPTURES + [DATA / "hostile.folded"], ids=lambda p: p.name.split(".")[0])
def test_counts_in_halves_are_the_whole_files(capture, tmp_path, monkeypatch):
    path = plain(capture, tmp_path) if capture.suffix == ".gz" else capture
    assert halfway(path, 1)
    assert counts(path, monkeypatch, True) == counts(path, monkeypatch, False)


def test_counts_in_halves_on_leaves_with_repeats(tmp_path, monkeypatch):
    stacks = [["main", "recv", "leaf_5"], ["solo"], ["main", "fn_3", "leaf_7"]]
    path = fleet_folded(tmp_path / "fleet.folded", 20_000, stacks)
    whole = counts(path, monkeypatch, False)
    assert counts(path, monkeypatch, True) == whole
    assert whole.count(1) > 15_000 and whole.count(2) > 0        # leaves seen once; callers and repeats


def test_an_irregular_line_in_the_second_half_is_raised_from_the_child(tmp_path, monkeypatch):
    path = fleet_folded(tmp_path / "fleet.folded", 2000, [["main", "x"]])
    path.write_text(path.read_text() + "main;broken\n")
    with pytest.raises(Irregular):
        counts(path, monkeypatch, True)


def test_no_halves_for_a_gzipd_file_a_small_one_or_one_line(tmp_path):
    one = tmp_path / "one.folded"
    one.write_text("a;" * 1000 + "b 1\n")
    assert halfway(DATA / CAPTURES[0].name) is None
    assert halfway(one, 1) is None
    assert halfway(fleet_folded(tmp_path / "f.folded", 100, [["a"]])) is None       # under two blocks
