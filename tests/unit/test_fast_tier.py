"""The fast tier's guard (tests/fast_tier/sitecustomize.py, installed by conftest.py): a unit or golden
test that starts a server, a load driver or a measuring profiler fails, also through a child process."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, guard, pytest_collection_modifyitems, tier_of


@pytest.mark.parametrize("argv", [
    ["h2load", "-n", "10", "http://127.0.0.1:1"],
    ["/usr/bin/ghz", "--insecure"],
    ["perf", "record", "-g", "-p", "1"],
    ["perf", "stat", "-x,", "-e", "cycles", "true"],
    ["py-spy", "record", "--pid", "1"],
    ["taskset", "-c", "0", "true"],
    [str(ROOT / "servers" / "rust_pajamax" / "target" / "release" / "rust_pajamax")],
    ["bash", str(ROOT / "servers" / "rust_pajamax" / "build.sh")],
    "h2load -n 10 http://127.0.0.1:1",
])
def test_live_programs_are_refused(argv):
    assert guard.refusal(argv) is not None


def test_a_relative_build_script_in_a_servers_folder_is_refused():
    assert guard.refusal(["bash", "build.sh"], cwd=ROOT / "servers" / "go_grpc") is not None


@pytest.mark.parametrize("argv", [
    ["perf", "script", "-i", "perf.data"],
    ["perf", "evlist", "-i", "perf.data"],
    ["perf", "--version"],
    ["py-spy", "--version"],
    ["inferno-flamegraph", "--title", "x"],
    ["git", "rev-parse", "HEAD"],
    [str(ROOT / "profile.sh"), "run", "--help"],
    [sys.executable, "-c", "print(1)"],
])
def test_what_reads_saved_files_or_checks_input_is_allowed(argv):
    assert guard.refusal(argv) is None


def _take_log() -> str:
    log = Path(os.environ[guard.LOG_ENV])
    text = log.read_text()
    log.write_text("")              # this test started them on purpose: the test itself must not fail
    return text


def test_a_fast_test_that_starts_a_live_program_is_stopped_and_logged():
    with pytest.raises(PermissionError, match="h2load"):
        subprocess.run(["h2load", "--version"], capture_output=True)
    assert "h2load --version" in _take_log()


def test_a_live_program_started_by_a_child_python_is_stopped_and_logged():
    child = subprocess.run([sys.executable, "-c", "import subprocess; subprocess.run(['perf', 'record', 'true'])"],
                           capture_output=True, text=True)
    assert child.returncode != 0 and "PermissionError" in child.stderr
    assert "perf record true" in _take_log()


def test_every_test_file_is_in_a_tier_folder(tmp_path):
    assert tier_of(ROOT / "tests" / "unit" / "test_x.py") == "unit"
    with pytest.raises(pytest.UsageError, match="belongs in tests/unit, tests/golden, tests/fuzz, tests/live"):
        tier_of(ROOT / "tests" / "test_x.py")


class CollectedTest:
    """What pytest_collection_modifyitems reads and writes of a collected test."""
    def __init__(self, path, *markers):
        self.path, self.markers = path, list(markers)

    def get_closest_marker(self, name):
        return name if name in self.markers else None

    def add_marker(self, marker):
        self.markers.append(marker)


def test_a_test_marked_slow_keeps_its_folders_marker_and_leaves_the_fast_tier():
    slow = CollectedTest(ROOT / "tests" / "golden" / "test_x.py", "slow")
    quick = CollectedTest(ROOT / "tests" / "unit" / "test_y.py")
    pytest_collection_modifyitems(None, [slow, quick])
    assert slow.markers == ["slow", "golden"] and quick.markers == ["unit", "fast"]


def test_the_guard_fails_a_fast_test_even_when_the_code_under_test_swallows_the_refusal(pytester):
    """A whole pytest session: a golden test that starts ghz and catches the error still fails."""
    tests = pytester.path / "tests"
    (tests / "golden").mkdir(parents=True)
    (tests / "fast_tier").mkdir()
    (tests / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text()
                                       .replace("ROOT = Path(__file__).resolve().parents[1]", f"ROOT = Path({str(ROOT)!r})")
                                       .replace('TESTS = ROOT / "tests"', "TESTS = Path(__file__).resolve().parent"))
    (tests / "fast_tier" / "sitecustomize.py").write_text((ROOT / "tests" / "fast_tier" / "sitecustomize.py").read_text()
                                                          .replace("Path(__file__).resolve().parents[2]", f"Path({str(ROOT)!r})"))
    (tests / "golden" / "test_swallows.py").write_text(
        "import subprocess\n"
        "def test_swallows():\n"
        "    try:\n"
        "        subprocess.run(['ghz', '--version'])\n"
        "    except Exception:\n"
        "        pass\n")
    result = pytester.runpytest_subprocess(str(tests), "-p", "no:cacheprovider", "-m", "fast")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*tests/golden started a live program*", "*ghz --version*"])
