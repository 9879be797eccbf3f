"""--help at every level prints without running setup: profile.sh (its own text, and each command's, from the
virtualenv as it is) and report.py (which never runs setup).

profile.sh is run from a copy of the checkout's scripts whose tools/setup.sh only leaves a mark and fails, with
the checkout's package (tools/rpcprof, servers/) linked in, PATH holding only the system's folders, and the
checkout's virtualenv: a help that ran setup would leave the mark and fail.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from rpcprof.cli import profile as profile_cli

VENV = Path(sys.prefix)
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
HELPS = [["--help"], ["-h"], [], *([c, "--help"] for c in sorted(profile_cli.main.commands)),
         ["run", "rust_tonic_mt", "java_grpc", "cpp_grpc", "--driver", "ghz", "-h"]]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """profile.sh and tools/env.sh as they are, tools/setup.sh a stub that leaves setup.ran and exits 3."""
    root = tmp_path_factory.mktemp("checkout")
    (root / "tools").mkdir()
    shutil.copy2(ROOT / "profile.sh", root / "profile.sh")
    shutil.copy2(ROOT / "tools" / "env.sh", root / "tools" / "env.sh")
    (root / "tools" / "rpcprof").symlink_to(ROOT / "tools" / "rpcprof")
    (root / "servers").symlink_to(ROOT / "servers")
    setup = root / "tools" / "setup.sh"
    setup.write_text(f'#!/bin/sh\ntouch "{root}/setup.ran"\nexit 3\n')
    setup.chmod(0o755)
    return root


def profile_sh(root: Path, *args: str, venv: Path = VENV) -> subprocess.CompletedProcess:
    (root / "setup.ran").unlink(missing_ok=True)
    env = {**os.environ, "PATH": SYSTEM_PATH, "RPCPROF_VENV": str(venv)}
    return subprocess.run([str(root / "profile.sh"), *args], capture_output=True, text=True, env=env, timeout=60)


def test_the_stub_setup_is_what_profile_sh_runs_otherwise(checkout):
    done = profile_sh(checkout, "run", "rust_tonic_mt")
    assert done.returncode == 3 and (checkout / "setup.ran").exists()


@pytest.mark.parametrize("args", HELPS, ids=" ".join)
def test_profile_sh_help_runs_no_setup(checkout, args):
    done = profile_sh(checkout, *args)
    assert done.returncode == 0, done.stderr
    assert not (checkout / "setup.ran").exists(), f"profile.sh {' '.join(args)} ran setup"
    command = next((a for a in args if a in profile_cli.main.commands), None)
    if command:
        assert f"Usage: profile.sh {command}" in done.stdout
    else:
        assert done.stdout.startswith("profile.sh - ") and "set -euo pipefail" not in done.stdout


def test_profile_sh_help_is_its_comment_block_from_its_first_words_to_its_last(checkout):
    text = profile_sh(checkout, "--help").stdout
    header = (ROOT / "profile.sh").read_text().split("\nset -euo pipefail")[0].splitlines()[2:]
    assert text.splitlines() == [line[2:] if line.startswith("# ") else line.lstrip("#") for line in header]


def test_a_command_help_without_a_virtualenv_says_what_makes_one_and_runs_no_setup(checkout, tmp_path):
    done = profile_sh(checkout, "run", "--help", venv=tmp_path / "no-venv")
    assert done.returncode == 0 and not (checkout / "setup.ran").exists()
    assert done.stdout.startswith("profile.sh - ") and "tools/setup.sh has made the virtualenv" in done.stderr


def test_report_py_help_runs_no_setup():
    script = (ROOT / "report.py").read_text()
    assert "subprocess" not in script and script.count("os.exec") == 1 and "os.execv(str(VENV_PYTHON)" in script
    env = {**os.environ, "PATH": SYSTEM_PATH}
    for args in (["--help"], ["compare", "--help"]):
        done = subprocess.run([str(VENV / "bin" / "python"), str(ROOT / "report.py"), *args], capture_output=True,
                              text=True, env=env, timeout=60)
        assert done.returncode == 0 and "Usage: report.py" in done.stdout, done.stderr
