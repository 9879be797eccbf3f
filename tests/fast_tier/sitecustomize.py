"""The fast tier's guard: no test of tests/unit or tests/golden starts a server, a load driver or a
measuring profiler.

conftest.py installs it in the pytest process around every fast-tier test and puts this folder on the
PYTHONPATH of that test's child processes, so Python started through profile.sh or report.py installs it too
(Python imports `sitecustomize` at start-up). Every process that starts another through subprocess or
os.exec* asks `refusal(argv)` first: a live program is refused (the start raises) and written to the file
named by RPCPROF_FAST_TIER_LOG, which conftest reads after the test, so the test fails even where the
code under test catches the exception.

Live programs: h2load and ghz; perf's recording and counting commands (perf script, report, evlist and
inject read saved files and stay allowed); py-spy's record, top and dump; a program in servers/ (a
server's binary) or a script there run by bash, Python or Node (build.sh, a server script); taskset (how
servers and drivers are pinned).
"""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "servers"
LOG_ENV = "RPCPROF_FAST_TIER_LOG"
ALWAYS_LIVE = {"h2load", "ghz", "taskset"}
PERF_MEASURES = {"record", "stat", "top", "trace", "sched", "lock", "mem", "kmem", "kvm", "c2c", "ftrace", "bench",
                 "kwork"}
PYSPY_MEASURES = {"record", "top", "dump"}


def _words(args) -> list[str]:
    if isinstance(args, (str, bytes, os.PathLike)):
        text = os.fsdecode(args)
        try:
            return shlex.split(text)
        except ValueError:
            return text.split()
    return [os.fsdecode(a) for a in args]


INTERPRETERS = {"bash", "sh", "python", "python3", "node"}


def _under_servers(word: str, cwd) -> bool:
    path = Path(word) if os.path.isabs(word) else Path(cwd or os.getcwd()) / word
    try:
        return path.resolve().is_relative_to(SERVERS)
    except (OSError, ValueError):
        return False


def refusal(args, cwd=None) -> str | None:
    """Why starting argv would make a test live, or None if it may start in the fast tier."""
    words = _words(args)
    if not words:
        return None
    program = os.path.basename(words[0])
    if program in ALWAYS_LIVE:
        return f"{program} starts a load driver or pins a server"
    verbs = [w for w in words[1:] if not w.startswith("-")]
    if program == "perf" and verbs and verbs[0] in PERF_MEASURES:
        return f"perf {verbs[0]} measures a live process"
    if program == "py-spy" and verbs and verbs[0] in PYSPY_MEASURES:
        return f"py-spy {verbs[0]} samples a live process"
    script = verbs[0] if program.rstrip("0123456789.") in INTERPRETERS and verbs else None
    for word in (words[0], script):
        if word and ("/" in word or word == script) and _under_servers(word, cwd):
            return f"{word} is a server's program or build script"
    return None


def _refuse(args, cwd=None) -> None:
    why = refusal(args, cwd)
    if why is None:
        return
    line = f"{os.getpid()}: {' '.join(_words(args))[:300]}: {why}"
    log = os.environ.get(LOG_ENV)
    if log:
        with open(log, "a") as f:
            f.write(line + "\n")
    raise PermissionError(f"fast tier: {line} (a test that needs it belongs in tests/live)")


_installed = False


def install() -> None:
    """Check every process start of this Python from now on (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    popen_init = subprocess.Popen.__init__

    def guarded_init(self, args, *rest, **kwargs):
        if os.environ.get(LOG_ENV):
            _refuse(args, kwargs.get("cwd"))
        popen_init(self, args, *rest, **kwargs)
    subprocess.Popen.__init__ = guarded_init

    for name in ("execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe"):
        original = getattr(os, name)

        def guarded_exec(path, *args, _original=original, _name=name):
            if os.environ.get(LOG_ENV):
                argv = args[0] if _name in ("execv", "execve", "execvp", "execvpe") else list(args)
                _refuse([os.fspath(path), *list(argv)[1:]])
            return _original(path, *args)
        setattr(os, name, guarded_exec)

    spawn = os.posix_spawn

    def guarded_spawn(path, argv, *args, **kwargs):
        if os.environ.get(LOG_ENV):
            _refuse([os.fspath(path), *list(argv)[1:]])
        return spawn(path, argv, *args, **kwargs)
    os.posix_spawn = guarded_spawn


if os.environ.get(LOG_ENV):     # a child process of a fast-tier test
    install()
