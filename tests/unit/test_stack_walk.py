"""The categorisation of a file read by the compiled core in chunks (analyze/stack_walk.categorize_file: each leaf
asked once, a stack whose leaf answers no question given its callers' answer, asked once per callers text), and
of the same stacks held in memory (categorize), gives what stack_group's walk gives each stack alone, in every
grouping: the same weights, totals, sample and stack counts, and the same deciding frames with the same weights;
on the real captures, on hostile frame names, and on many stacks recombined from both."""
from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from conftest import fleet_folded

from rpcprof.analyze.categorize import categorize, load_rules, open_folded
from rpcprof.analyze.stack_walk import FrameAnswers, breakdowns_kept, categorize_file, stack_group
from rpcprof.errors import UserError

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz"))
RULES = load_rules()
GROUPINGS = [(1, "category"), (2, "category"), (1, "tax"), (2, "tax"), (1, "waits")]
APP = r"main\.\(\*server\)|Greeter|<script>"      # an app pattern that meets real and hostile frames


def same_answer(path: Path, rules) -> None:
    stacks = open_folded(path)
    answers = FrameAnswers(rules)
    weights, by_frame = dict.fromkeys(rules.all_categories, 0), {}
    for frames, w in stacks:                       # the walk, one stack at a time
        group, frame = stack_group(";".join(frames), answers)
        weights[group] += w
        by_frame.setdefault(group, {})[frame] = by_frame.get(group, {}).get(frame, 0) + w
    total = sum(weights.values())
    samples = total // math.gcd(*(w for _, w in stacks))
    lean = categorize_file(path, rules, keep_frames=False)      # table's: no deciding frames
    for got in (categorize_file(path, rules), categorize(stacks, rules), lean):
        assert (got.weights, got.total, got.samples, got.stacks) == (weights, total, samples, len(stacks))
    for got in (categorize_file(path, rules), categorize(stacks, rules)):
        assert got.by_frame == by_frame


def recombined(path: Path, n: int, seed: int) -> Path:
    """n stacks made of the captures' and hostile.folded's real frames, cut and joined at random: slices of real
    stacks under real frames of other stacks, empty frames, lone leaves, weights in periods and zeros."""
    stacks = [frames for p in CAPTURES + [DATA / "hostile.folded"] for frames, _ in open_folded(p)]
    frames = [f for s in stacks for f in s] + ["", "x_[k]", "tcp_sendmsg_[k]_[k]", "a\rb", "malloc_[j]"]
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        s = rng.choice(stacks)
        i = rng.randrange(len(s))
        stack = [rng.choice(frames) for _ in range(rng.randrange(3))] + s[i:rng.randrange(i, len(s)) + 1]
        if rng.random() < 0.3:
            stack.append(rng.choice(frames))
        lines.append(f"{';'.join(stack)} {rng.choice([0, 1, 3, 1010101, 2020202])}\n")
    path.write_text("".join(lines) + "\n  \n", encoding="utf-8", newline="\n")
    return path


@pytest.mark.parametrize("level, view", GROUPINGS)
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name.split(".")[0])
def test_streamed_categorisation_is_the_per_stack_answer_on_real_captures(capture, level, view):
    same_answer(capture, RULES.using(level, view))


@pytest.mark.parametrize("level, view", GROUPINGS)
@pytest.mark.parametrize("app", [None, APP])
def test_streamed_categorisation_is_the_per_stack_answer_on_hostile_and_recombined_stacks(tmp_path, level, view, app):
    rules = RULES.using(level, view).with_app(app)
    same_answer(DATA / "hostile.folded", rules)
    same_answer(recombined(tmp_path / "mixed.folded", 20_000, seed=level * 10 + len(view)), rules)


@pytest.mark.parametrize("level, view", GROUPINGS)
def test_distinct_leaves_over_chunks_give_the_per_stack_answer(tmp_path, monkeypatch, level, view):
    """Distinct leaves read in the core's chunks (lines and runs of leaves across them) and counted by their
    callers' answers: the per-stack answer, with the same deciding frames."""
    from rpcprof.analyze import rules, stack_walk
    monkeypatch.setattr(stack_walk, "LEAVES_AT_ONCE", 16)
    monkeypatch.setattr(stack_walk, "FILTER_FROM", 16)
    monkeypatch.setattr(rules, "CACHE_LIMIT", 64)               # the answers kept start afresh as they grow
    # leaves a rule decides, kernel and JIT suffixes, generic arguments, empty frames, non-ASCII and control
    # characters among the fleet's leaves; the last line without its newline
    odd = ["tcp_sendmsg_[k]", "malloc_[j]", "Vec<u8>::push", "", "é_leaf", "a\rb", "x\x7fy", "h2::proto::x"]
    stacks = [frames for p in CAPTURES[:2] for frames, _ in open_folded(p)]
    path = fleet_folded(tmp_path / "leaves.folded", 20_000, stacks, odd)
    for app in (None, APP):
        same_answer(path, RULES.using(level, view).with_app(app))


NOT_A_STACK = "is not a folded stack ('frame;frame;... COUNT' with COUNT in 0-9): "
NO_SAMPLES = "no samples (the file is empty or every count is 0): profile again, or give another folded file"


@pytest.mark.parametrize("body, words", [
    ("a;b 1\nnot a stack\n", f"line 2 {NOT_A_STACK}'not a stack'"),
    ("a;b 1\n\n  \na 12\u0663\n", f"line 4 {NOT_A_STACK}'a 12\u0663'"),       # blank lines counted, ASCII digits only
    ("a 1\nb\rc x\r\n", f"line 2 {NOT_A_STACK}'b\\rc x'"),
    ("a 1\nb 1234567890123456\n", "line 2: count 1234567890123456 is 10^15 or more, more than any profile's weight: "
                                   "a damaged line"),
    ("a 1\nb 123456789012345678901234\n", "line 2: count 12345678901234567890... is 10^15 or more, more than any "
                                          "profile's weight: a damaged line"),
    ("a 0\n\n", NO_SAMPLES), ("", NO_SAMPLES)])
def test_a_damaged_file_is_one_line_naming_the_line(tmp_path, body, words):
    path = tmp_path / "bad.folded"
    path.write_text(body, encoding="utf-8", newline="\n")
    for read in (open_folded, lambda p: categorize_file(p, RULES)):
        with pytest.raises(UserError) as got:
            read(path)
        assert str(got.value) == f"{path}: {words}"


def test_a_damaged_gzip_stream_is_named_as_python_reads_it(tmp_path):
    import gzip
    whole = gzip.compress(b"a 1\n" * 10_000)
    path = tmp_path / "cut.folded.gz"
    path.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(UserError) as got:
        categorize_file(path, RULES)
    assert str(got.value) == f"{path}: unreadable: Compressed file ended before the end-of-stream marker was reached"


def test_a_missing_file_is_named_alike(tmp_path):
    with pytest.raises(UserError, match="no such folded file"):
        categorize_file(tmp_path / "none.folded", RULES)


def test_blank_lines_are_those_strip_leaves_empty(tmp_path):
    """The compiled core skips the lines Python's str.isspace() calls blank, and the CRs at a line's end."""
    spaces = [chr(c) for c in range(0x3000 + 1) if chr(c).isspace() or not chr(c).strip()]
    lines = [f"{s}{s}\n" for s in spaces] + ["a 1\n", "\u00a0x 2\n", "tcp_sendmsg 3\r\r\n"]
    path = tmp_path / "blank.folded"
    path.write_text("".join(lines), encoding="utf-8", newline="\n")
    assert open_folded(path) == [(["a"], 1), (["\u00a0x"], 2), (["tcp_sendmsg"], 3)]
    same_answer(path, RULES)


def test_a_server_app_pattern_or_grouping_asked_again_is_the_same_rules():
    """Each report of report.html asks for a server's rules anew: they are the same object, so that it shares their
    answers and the profiles categorised with them."""
    assert RULES.with_app(APP, "go_grpc's app pattern") is RULES.with_app(APP, "go_grpc's app pattern")
    assert RULES.with_app(APP, "--app") is not RULES.with_app(APP, "go_grpc's app pattern")
    assert RULES.using(level=2).with_app(APP) is RULES.using(level=2).with_app(APP)
    assert RULES.using(level=2) is not RULES.using(level=1)


def test_within_breakdowns_kept_a_file_is_categorised_once_per_rules(tmp_path):
    path = tmp_path / "a.folded"
    path.write_text("main;tcp_sendmsg_[k] 3\nmain;other 2\n")
    level2 = RULES.using(level=2)
    with breakdowns_kept():
        first = categorize_file(path, RULES)
        path.write_text("main;tcp_recvmsg_[k] 5\n")          # not read again: the files must not change meanwhile
        assert categorize_file(path, RULES) is first
        assert categorize_file(path, level2).total == 5
    again = categorize_file(path, RULES)
    assert first.weights["send"] == 3 and again.weights["recv"] == 5
