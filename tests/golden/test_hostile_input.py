"""Bad input of every kind report.py reads gives one line `report.py: error: FILE: ...` naming the file, the
key and the fix, and exit 2 (never a traceback, never exit 0); hostile text is escaped for each sink.

Each case runs report.py in-process through its error boundary (cli/common.run_click), on a copy of a
real run folder (tests/data/runs/seed-001) or a small file made here.
"""
from __future__ import annotations

import csv
import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from rpcprof.cli.common import run_click
from rpcprof.cli.report import main
from rpcprof.report.html import esc

DATA = Path(__file__).resolve().parents[1] / "data"
RUNS = DATA / "runs"


def report(capsys, *args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of report.py ARGS run in-process through its error boundary."""
    with pytest.raises(SystemExit) as e:
        run_click(main, [str(a) for a in args])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def one_error_line(code: int, err: str) -> str:
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("report.py: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def run(tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(RUNS / "seed-001", out)
    return out


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    data = change(data) or data
    path.write_text(json.dumps(data))


# --- A. run files and rules files, validated by type ---------------------------------------------

RUN_FILE_CASES = {
    "servers a number": ("manifest.json", lambda d: d["parameters"].update(servers=5),
                         "manifest.json: key 'parameters.servers' must be a list, got a number; re-run or fix the file"),
    "manifest a list": ("manifest.json", lambda d: [d],
                        "manifest.json: the file must be a mapping, got a list"),
    "status unknown": ("manifest.json", lambda d: d.update(status=3),
                       "manifest.json: key 'status' must be one of running, complete"),
    "metrics a list": ("metrics.json", lambda d: list(d), "metrics.json: the file must be a mapping, got a list"),
    "req/s a string": ("metrics.json", lambda d: d["rust_pajamax"].update(req_per_s="fast"),
                       "metrics.json: key 'rust_pajamax.req_per_s' must be a number, got a string"),
    "latency a number": ("metrics.json", lambda d: d["rust_tonic_mt"].update(latency=5),
                         "metrics.json: key 'rust_tonic_mt.latency' must be a mapping, got a number"),
    "a server a string": ("metrics.json", lambda d: d.update(rust_tonic_st="ok"),
                          "metrics.json: key 'rust_tonic_st' must be a mapping, got a string"),
    "neighbours a number": ("metrics.json", lambda d: d["rust_tonic_mt"].update(neighbours=5),
                            "metrics.json: key 'rust_tonic_mt.neighbours' must be a list, got a number"),
    "a card's neighbour without a pid": ("manifest.json", lambda d: d.update(host={"neighbours": [{"name": "x",
                                                                                                    "cores": 1.0}]}),
                                         "manifest.json: key 'host.neighbours[x]' has no key 'pid'"),
    "steal a list": ("metrics.json", lambda d: d["rust_tonic_mt"].update(steal=[0.5]),
                     "metrics.json: key 'rust_tonic_mt.steal' must be a mapping, got a list"),
    "a card's steal a word": ("manifest.json", lambda d: d.update(host={"steal": {"0": "much"}}),
                              "manifest.json: key 'host.steal.0' must be a number, got a string"),
    "halting CPUs a word": ("metrics.json", lambda d: d["rust_tonic_mt"].update(halting="1"),
                            "metrics.json: key 'rust_tonic_mt.halting' must be a list, got a string"),
    "a card's halting CPU negative": ("manifest.json", lambda d: d.update(host={"halting": [-1]}),
                                      "manifest.json: key 'host.halting[1]' must be as documented, got -1"),
    "sweep without cells": ("manifest.json", lambda d: d.update(mode="sweep", cells=None),
                            "manifest.json: key 'cells' must be a mapping, got null"),
}


@pytest.mark.parametrize("case", RUN_FILE_CASES)
def test_a_run_file_of_the_wrong_type_is_one_line_naming_file_and_key(capsys, run, case):
    name, change, message = RUN_FILE_CASES[case]
    edit_json(run / name, change)
    command = "sweep" if "sweep" in case else "run"
    line = one_error_line(*report(capsys, command, run)[::2])
    assert f"{run}/{message}" in line


def test_a_result_json_of_the_wrong_type_is_named(capsys, run):
    folded = run / "rust_pajamax" / "profile.folded.gz"
    edit_json(run / "rust_pajamax" / "result.json", lambda d: d.update(app=["x"]))
    line = one_error_line(*report(capsys, "table", folded)[::2])
    assert "rust_pajamax/result.json: key 'app' must be a string, got a list" in line


@pytest.mark.parametrize("name", ["manifest.json", "metrics.json"])
def test_a_run_file_that_is_not_utf8_is_named(capsys, run, name):
    (run / name).write_bytes(b'{"mode": "run", "note": "caf\xe9"}')
    line = one_error_line(*report(capsys, "run", run)[::2])
    assert f"{run / name}: not UTF-8 text (byte 0xe9 at offset 28)" in line


@pytest.mark.parametrize("content, message", [
    ("[" * 100_000, "not JSON rpcprof can read (RecursionError"),
    ('{"a": ' + "9" * 5000 + "}", "not JSON rpcprof can read (ValueError"),
])
def test_json_too_deep_or_with_a_huge_number_is_damaged_not_a_crash(capsys, run, content, message):
    (run / "metrics.json").write_text(content)
    assert message in one_error_line(*report(capsys, "run", run)[::2])


def test_a_file_where_a_run_folder_is_expected(capsys, tmp_path):
    f = tmp_path / "notarun"
    f.write_text("x")
    assert f"{f}: a file, not a run folder" in one_error_line(*report(capsys, "compare", f)[::2])


def test_run_and_sweep_folders_given_to_each_others_commands(capsys):
    line = one_error_line(*report(capsys, "sweep", RUNS / "seed-001")[::2])
    assert "a run folder, not a sweep" in line
    line = one_error_line(*report(capsys, "run", RUNS / "sweep")[::2])
    assert "a sweep folder, not a run" in line


def rules_file(tmp_path, change=None, extra: bytes = b"") -> Path:
    """A small valid rules file, changed by change(data) before it is written (extra: bytes appended)."""
    data = {"other_color": "#b4b4b4", "categories": [
        {"name": "app", "color": "#00ff00", "rules": [{"name": "evil", "match": "^main$", "examples": ["main"]}]},
        {"name": "recv", "color": "#0000ff", "rules": [{"name": "tcp", "match": "^tcp_recvmsg$",
                                                        "examples": ["tcp_recvmsg_[k]"]}]}]}
    if change:
        change(data)
    path = tmp_path / "rules.yaml"
    path.write_bytes(yaml.safe_dump(data).encode() + extra)
    return path


def recv_rule(data) -> dict:
    return data["categories"][1]["rules"][0]


@pytest.mark.parametrize("change, extra, message", [
    (lambda d: d["categories"][1].update(rules=5), b"", "key 'categories[recv].rules' must be a list, got a number"),
    (lambda d: d.update(other_color="grey"), b"", "key 'other_color' must be a colour like #4caf50, got 'grey'"),
    (lambda d: d.update(other_color=0xb4b4b4), b"", "key 'other_color' must be a string, got a number"),
    (lambda d: d["categories"][0].update(color="green"), b"",
     "key 'categories[app].color' must be a colour like #4caf50, got 'green'"),
    (lambda d: recv_rule(d).update(examples=7), b"",
     "key 'categories[recv].rules[tcp].examples' must be a list, got a number"),
    (lambda d: recv_rule(d).update(match=["x"]), b"", "key 'categories[recv].rules[tcp].match' must be a string, got a list"),
    (lambda d: recv_rule(d).update(where="both"), b"",
     "key 'categories[recv].rules[tcp].where' must be one of any, kernel, user, got 'both'"),
    (lambda d: d.update({1: "x"}), b"", "unknown top-level key(s) 1"),
    (None, b"# caf\xe9\n", "not UTF-8 text (byte 0xe9"),
])
def test_a_rules_file_of_the_wrong_type_is_one_line(capsys, tmp_path, change, extra, message):
    path = rules_file(tmp_path, change, extra)
    line = one_error_line(*report(capsys, "check-rules", "--rules", path)[::2])
    assert line.startswith("report.py: error: rules.yaml: ") and message in line


# --- B. a catastrophic regex names its rule instead of hanging ------------------------------------

@pytest.fixture
def long_frame(tmp_path) -> Path:
    """A frame that is not printable ASCII, so the rules meet it one by one, under the time budget
    (analyze/patterns.py)."""
    folded = tmp_path / "long.folded"
    folded.write_text("main;" + "a" * 4999 + "\u00e9! 3\nmain;tcp_recvmsg_[k] 1\n")
    return folded


def test_a_catastrophic_rule_on_a_printable_ascii_frame_is_answered_by_the_automaton(capsys, tmp_path):
    folded = tmp_path / "long.folded"
    folded.write_text("main;" + "a" * 5000 + "! 3\nmain;tcp_recvmsg_[k] 1\n")
    rules = rules_file(tmp_path, lambda d: d["categories"][0]["rules"][0].update(match="(a+)+$", examples=["aaa"]))
    code, out, err = report(capsys, "table", folded, "--rules", rules, "--format", "csv")
    assert code == 0 and not err
    row = out.splitlines()[1].split(",")
    assert row[1:4] == ["4", "0.0", "25.0"]         # samples, app (the long frame is not app), recv


@pytest.mark.slow
def test_a_rule_that_backtracks_catastrophically_is_named(capsys, tmp_path, long_frame):
    rules = rules_file(tmp_path, lambda d: d["categories"][0]["rules"][0].update(match="(a+)+$", examples=["aaa"]))
    line = one_error_line(*report(capsys, "table", long_frame, "--rules", rules)[::2])
    assert "rules.yaml: rule 'evil' in app: regex '(a+)+$' took over 1 s on one frame (5,001 characters" in line


@pytest.mark.slow
def test_an_app_regex_that_backtracks_catastrophically_is_named(capsys, long_frame):
    line = one_error_line(*report(capsys, "table", long_frame, "--app", "(a|aa)+$")[::2])
    assert "--app: regex '(a|aa)+$' took over 1 s on one frame (5,001 characters" in line


# --- C. hostile text, for each sink ------------------------------------------------------------------

@pytest.mark.parametrize("count", ["\u0661\u0662", "\u00b2", "1\u0662", "+3", "3.5"])
def test_a_count_that_is_not_ascii_digits_is_a_malformed_line(capsys, tmp_path, count):
    folded = tmp_path / "x.folded"
    folded.write_text(f"main;ok 4\nmain;leaf {count}\n")
    line = one_error_line(*report(capsys, "table", folded)[::2])
    assert f"{folded}: line 2 is not a folded stack" in line


@pytest.mark.parametrize("content", ["", "\n\n", "main;leaf 0\n"])
def test_a_folded_file_without_samples_is_an_error_naming_it(capsys, tmp_path, content):
    folded = tmp_path / "empty.folded"
    folded.write_text(content)
    assert f"{folded}: no samples" in one_error_line(*report(capsys, "table", folded)[::2])


@pytest.mark.parametrize("bad", ["\uffff", "\ufffe", "\x00", "\x08", "\x1b[31m", "\u202e"])
def test_svg_of_a_frame_with_characters_xml_forbids_is_valid_xml(capsys, tmp_path, bad):
    if not shutil.which("inferno-flamegraph") and not (Path.home() / ".cargo/bin/inferno-flamegraph").exists():
        pytest.skip("inferno not installed (tools/setup.sh)")
    folded, out = tmp_path / "x.folded", tmp_path / "x.svg"
    folded.write_text(f"main;a{bad}b;leaf 3\nmain;tcp_recvmsg_[k] 1\n", encoding="utf-8", errors="surrogatepass")
    code, _, err = report(capsys, "svg", folded, "-o", out)
    assert code == 0, err
    titles = [t.text for t in ET.parse(out).getroot().iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith(f"a\ufffd{bad[1:]}b (") for t in titles)


ESC_FOLDED = "main;\x1b[2Jclear;leaf\x1b[2Kx\x07 3\nmain;a|b\rc 1\nmain;ok\u202eevil\u2066 1\n"


@pytest.mark.parametrize("fmt, shown, absent", [
    ("table", ["leaf\\x1b[2Kx\\x07", "a|b\\rc", "ok\\u202eevil\\u2066"], ["\x1b", "\x07", "\r", "\u202e", "\u2066"]),
    ("markdown", ["leaf\\x1b[2Kx\\x07", "a\\|b c", "ok\\u202eevil\\u2066"], ["\x1b", "\x07", "\r", "a|b", "\u202e"]),
])
def test_control_characters_are_shown_as_escapes_never_sent_raw(capsys, tmp_path, fmt, shown, absent):
    folded = tmp_path / "esc.folded"
    folded.write_text(ESC_FOLDED)
    code, out, err = report(capsys, "top", folded, "-c", "other", "--format", fmt)
    assert code == 0, err
    for text in shown:
        assert text in out
    for text in absent:
        assert text not in out


def test_csv_keeps_the_name_whole_for_the_csv_reader(capsys, tmp_path):
    folded = tmp_path / "x.folded"
    folded.write_text('main;a,"b"\x1bc 3\n')
    code, out, err = report(capsys, "top", folded, "-c", "other", "--format", "csv")
    assert code == 0, err
    assert list(csv.reader(io.StringIO(out)))[1][2] == 'a,"b"\x1bc'


def test_an_error_naming_a_hostile_file_name_escapes_it(capsys, tmp_path):
    folded = tmp_path / "x\x1b[2J\ny.folded"
    line = one_error_line(*report(capsys, "table", folded)[::2])
    assert "x\\x1b[2J\\ny.folded: no such folded file" in line


def test_a_lone_surrogate_in_a_server_name_is_escaped_not_a_crash(capsys, run):
    edit_json(run / "manifest.json", lambda d: d["parameters"]["servers"].append("evil\ud800\x1b"))
    edit_json(run / "metrics.json", lambda d: d.update({"evil\ud800\x1b": dict(d["rust_pajamax"])}))
    code, out, err = report(capsys, "run", run)
    assert code == 0, err
    assert "evil\\ud800\\x1b" in out and "\x1b" not in out


@pytest.mark.parametrize("text, safe", [
    ("<script>\uffff", "&lt;script&gt;\ufffd"),
    ('x" onload="a\x00', "x&quot; onload=&quot;a\ufffd"),
    ("\ud800&", "\ufffd&amp;"),
    ("user\u202egnp.exe", "user\ufffdgnp.exe"),          # a right-to-left override shows "exe.png"
])
def test_html_text_is_escaped_and_xml_safe(text, safe):
    assert esc(text) == safe


# --- D. refusals that name the real reason, in a line of readable length ---------------------------

@pytest.mark.parametrize("name", ["a<b", "r&d", "a|b", 'say"hi"', "it's"])
def test_a_category_name_with_markup_characters_is_refused_naming_them(capsys, tmp_path, name):
    path = rules_file(tmp_path, lambda d: d["categories"].append({"name": name, "color": "#123456", "rules": []}))
    line = one_error_line(*report(capsys, "check-rules", "--rules", path)[::2])
    assert f"key 'categories[{name}].name'" in line and "letters, digits" in line, line
    assert "reserved" not in line


@pytest.mark.parametrize("name", ["other", "a/b"])
def test_a_reserved_category_name_or_one_with_a_slash_is_refused(capsys, tmp_path, name):
    path = rules_file(tmp_path, lambda d: d["categories"].append({"name": name, "color": "#123456", "rules": []}))
    line = one_error_line(*report(capsys, "check-rules", "--rules", path)[::2])
    assert f"key 'categories[{name}].name'" in line and "not 'other'" in line, line


def test_many_shadowed_rules_are_summarised_with_a_count(capsys, tmp_path):
    def shadow(d):
        d["categories"][1]["rules"].insert(0, {"name": "broad", "match": "^f", "examples": ["f"]})
        d["categories"][1]["rules"] += [{"name": f"never-{i}", "match": f"^f{i}$", "examples": [f"f{i}"]}
                                        for i in range(100)]
    code, _, err = report(capsys, "check-rules", "--rules", rules_file(tmp_path, shadow))
    assert code == 1 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert len(err) < 1000, len(err)
    assert "100 problems" in err and "rule 'never-0' in recv" in err and "and 97 more" in err, err
