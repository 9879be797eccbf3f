"""report.py through click's CliRunner: exit code, stdout and stderr checked separately."""
import csv
import io
import json

import pytest
from click.testing import CliRunner

from rpcprof.cli.report import main

COMMANDS = ["table", "compare", "top", "explain", "check-rules"]

FOLDED = "\n".join([
    "srv;tokio::runtime::task::raw::poll;h2::codec::FramedRead::poll;tcp_recvmsg_[k] 3003003",
    "srv;tokio::runtime::task::raw::poll;h2::codec::FramedRead::poll 5005005",
    "srv;tokio::runtime::task::raw::poll;my::Handler::call;malloc 1001001",
    "srv;tokio::runtime::task::raw::poll 1001001",
    "srv;[unknown] 1001001",
]) + "\n"


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output


@pytest.fixture
def folded(tmp_path):
    path = tmp_path / "profile.folded"
    path.write_text(FOLDED)
    return path


def test_table_reports_shares_that_add_up(folded):
    result = run("table", str(folded), "--app", r"my::Handler", "--format", "json")
    assert result.exit_code == 0
    row = json.loads(result.output)[0]
    assert row["samples"] == 11
    assert row["recv"] == pytest.approx(300 / 11)
    assert row["protocol"] == pytest.approx(500 / 11)
    assert row["app"] == pytest.approx(100 / 11)
    assert row["runtime"] == pytest.approx(100 / 11)
    assert row["other"] == pytest.approx(100 / 11)
    total = sum(row[c] for c in ("app", "recv", "send", "protocol", "runtime", "other"))
    assert total == pytest.approx(100)


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_table_renders_every_format(folded, fmt):
    result = run("table", str(folded), "--format", fmt)
    assert result.exit_code == 0 and "profile" in result.output
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(result.output)))
        assert rows[0][:2] == ["profile", "samples"] and len(rows) == 2
    if fmt == "markdown":
        assert result.output.splitlines()[1].startswith("|---")


def test_top_lists_the_frames_that_decide_a_category(folded):
    result = run("top", str(folded), "-c", "protocol", "--format", "json")
    rows = json.loads(result.output)
    assert rows[0]["frame"] == "h2::codec::FramedRead::poll"
    assert rows[0]["share"] == pytest.approx(500 / 11)


def test_explain_names_rule_and_normalised_frame():
    result = run("explain", "core::ptr::drop_in_place<h2::X<T>>_[k]", "--format", "json")
    row = json.loads(result.output)[0]
    assert row["matched_as"] == "core::ptr::drop_in_place" and row["kernel"] is True
    result = run("explain", "do_writev_[k]", "--format", "json")
    assert json.loads(result.output)[0]["category"] == "send"


def test_check_rules_passes_on_the_shipped_rules():
    result = run("check-rules")
    assert result.exit_code == 0 and "all decided by their own rule" in result.output


def test_unknown_category_is_a_usage_error(folded):
    from rpcprof.errors import UserError
    with pytest.raises(UserError, match="choose one of"):
        run("top", str(folded), "-c", "nope")


def test_malformed_folded_file_names_the_line(tmp_path):
    from rpcprof.errors import UserError
    bad = tmp_path / "bad.folded"
    bad.write_text("a;b 12\nthis is not folded\n")
    with pytest.raises(UserError, match="line 2 is not a folded stack"):
        run("table", str(bad))


def test_compare_rejects_a_folder_that_is_not_a_run(tmp_path):
    from rpcprof.errors import UserError
    with pytest.raises(UserError, match="not a run folder"):
        run("compare", str(tmp_path))


SAVED = __import__("pathlib").Path(__file__).parents[1] / "data" / "runs"


@pytest.mark.parametrize("args", [
    ["table", "{folded}"], ["table", "{folded}", "--level", "2"], ["table", "{folded}", "--view", "tax"],
    ["top", "{folded}", "-c", "protocol"], ["explain", "tcp_recvmsg_[k]"], ["check-rules"],
    ["compare", "{run}"], ["compare", "{run}", "--level", "2"], ["compare", "{run}", "--view", "tax"],
    ["run", "{run}"], ["sweep", "{sweep}"], ["waits", "{offcpu}"],
], ids=lambda a: " ".join(a))
def test_every_json_output_is_one_document(args):
    """--format json prints exactly one JSON document, whatever the command (jq and json.loads need it)."""
    values = {"folded": str(SAVED / "seed-001" / "rust_tonic_mt" / "profile.folded.gz"),
              "run": str(SAVED / "seed-001"), "sweep": str(SAVED / "sweep"), "offcpu": str(SAVED / "offcpu")}
    result = CliRunner().invoke(main, [a.format(**values) for a in args] + ["--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)
