"""The core's rows (analyze/encoded_rows.py) are counted as folded_rows' rows are: the same tally, whether a
chunk is summed by callers at once or given to add_rows row by row; and a file the block reader does not take
is refused, so that categorize_file reads it its own way."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.analyze.encoded_rows import read_into
from rpcprof.analyze.folded_blocks import folded_rows
from rpcprof.analyze.stack_walk import Tally

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz"))
RULES = load_rules()


def tallies(path: Path, rules=RULES) -> tuple[Tally, Tally, bool]:
    encoded, read = Tally(rules, False), Tally(rules, False)
    took = read_into(encoded, path)
    for _, rows in folded_rows(path):
        read.add_rows(rows)
    return encoded, read, took


def same(encoded: Tally, read: Tally) -> None:
    assert encoded.breakdown("x") == read.breakdown("x")
    assert (encoded.stacks, encoded.unit) == (read.stacks, read.unit)


@pytest.mark.parametrize("capture", CAPTURES[:3], ids=lambda p: p.name.split(".")[0])
def test_a_capture_gzip_d_or_not(capture, tmp_path):
    plain = tmp_path / "plain.folded"
    with gzip.open(capture, "rb") as f, open(plain, "wb") as out:
        shutil.copyfileobj(f, out)
    for path in (capture, plain):
        encoded, read, took = tallies(path)
        assert took
        same(encoded, read)


@pytest.mark.parametrize("view", ["category", "tax", "waits"])
def test_the_leaves_shape_with_lone_frames_and_zeros_over_several_chunks(tmp_path, view):
    stacks = [frames for frames, _ in open_folded(CAPTURES[0])[:30]]
    path = fleet_folded(tmp_path / "leaves.folded", 40_000, stacks, ["send", "x_[k]", "lone"])
    encoded, read, took = tallies(path, RULES.using(1, view))
    assert took and encoded.under_callers         # some chunks were summed by callers at once
    same(encoded, read)


def test_a_file_the_block_reader_does_not_take_is_refused(tmp_path):
    path = tmp_path / "bad.folded"
    path.write_text("a;b 1\n\nc 2\n", encoding="utf-8")
    assert not read_into(Tally(RULES, False), path)


@pytest.mark.parametrize("keep_frames", [True, False])
def test_chunks_counted_at_once_give_the_rows_answer(tmp_path, keep_frames):
    """Chunks of leaves no rule matches: summed by callers (without frames), or each leaf counted under itself in
    one update (with them), in the same order as the rows give it."""
    path = tmp_path / "leaves.folded"
    lines = [f"main;worker_{i % 7};fn_{i % 13};leaf_{i} {i % 7 + 1}\n" for i in range(40_000)]
    lines[35_000] = "main;worker_1;tcp_sendmsg 2\n"       # a chunk with a leaf a rule decides: its rows one by one
    path.write_text("".join(lines), encoding="utf-8")
    encoded, read = Tally(RULES, keep_frames), Tally(RULES, keep_frames)
    assert read_into(encoded, path)
    for _, rows in folded_rows(path):
        read.add_rows(rows)
    same(encoded, read)
    got, want = encoded.breakdown("x"), read.breakdown("x")
    assert [(g, list(f.items())) for g, f in got.by_frame.items()] == [(g, list(f.items())) for g, f in want.by_frame.items()]
    assert bool(got.by_frame) == keep_frames
