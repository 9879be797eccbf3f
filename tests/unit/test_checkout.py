"""A checkout runs its own code: profile.sh, tests/run.sh and report.py refuse, in one line with the fix and
exit 2, a virtualenv whose rpcprof is another checkout's (an editable install made by that checkout), which
would otherwise run the other checkout's code and write into its flamegraphs/. Nothing is measured: the
commands asked for stop at their --help, after the check."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

VENV = ROOT / ".venv"
needs_venv = pytest.mark.skipif(not (VENV / "bin" / "python").exists(), reason="tools/setup.sh makes .venv")


@pytest.fixture
def second(tmp_path) -> Path:
    """A second checkout of the project's scripts, with no virtualenv of its own."""
    other = tmp_path / "b"
    for name in ("profile.sh", "report.py", "tests/run.sh", "tools/env.sh", "tools/setup.sh"):
        (other / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, other / name)
    return other


def run(argv: list[str], **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("RPCPROF_VENV", "RPCPROF_ROOT")}
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env={**environ, **env})


def one_error(done: subprocess.CompletedProcess, prog: str) -> str:
    assert done.returncode == 2 and done.stdout == "", done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: the virtualenv "), done.stderr
    return lines[0]


@needs_venv
@pytest.mark.parametrize("script, prog", [("profile.sh", "profile.sh"), ("tests/run.sh", "tests/run.sh")])
def test_a_virtualenv_given_by_rpcprof_venv_that_runs_another_checkout_is_refused(second, script, prog):
    line = one_error(run([str(second / script), *(["run", "--help"] if script == "profile.sh" else ["--co"])],
                         RPCPROF_VENV=str(VENV)), prog)
    assert f"runs the code of {ROOT}, not of this checkout ({second})" in line
    assert line.endswith("unset RPCPROF_VENV (or point it at a virtualenv of this checkout) and run tools/setup.sh here")
    assert not (second / ".venv").exists()          # setup never ran: it would have installed into that virtualenv


@needs_venv
def test_a_checkouts_own_venv_holding_another_checkouts_code_is_refused(second):
    (second / ".venv").symlink_to(VENV)
    line = one_error(run([str(second / "profile.sh"), "run", "--help"]), "profile.sh")
    assert line.endswith(f"remove {second / '.venv'} and run tools/setup.sh here")
    line = one_error(run([str(second / "report.py"), "run", "--help"]), "report.py")
    assert f"runs the code of {ROOT}, not of this checkout ({second})" in line
    assert line.endswith(f"remove {second / '.venv'} and run tools/setup.sh here")


def test_report_py_started_by_a_python_holding_another_checkouts_code_is_refused(second):
    line = one_error(run([sys.executable, str(second / "report.py"), "run", "--help"]), "report.py")
    assert line.endswith("run tools/setup.sh here (it makes .venv with this checkout's rpcprof in it)")


@needs_venv
def test_this_checkout_runs_its_own_code():
    for argv in ([str(ROOT / "profile.sh"), "run", "--help"], [str(ROOT / "report.py"), "run", "--help"]):
        done = run(argv)
        assert done.returncode == 0 and done.stdout.startswith("Usage: "), done.stderr
