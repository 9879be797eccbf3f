"""What a running process is, for `profile.sh attach`: its language runtime (native, Go, CPython, Node, a
JVM), the profiler and call-graph mode that see its code, what to run at the end of a window so that its JIT
frames get names (a JVM's perf map), and whether this user may profile it; and its app category (guess_app):
its own code, found from what it is.

    Rust      the crate the executable was built from (its file name, - as _), minus the gRPC code
              generated into it (modules named *_server / *_client, impls of protocol traits)
    Go        the main package and the main module's own packages (from the binary's build info),
              minus generated packages named pb, proto or gen
    Python    the program's own files: the .py files beside the script it was started with
    Node      JS frames from files outside node_modules and node's internals
    other     none: app 0 %, said so (--app REGEX names it)

`--app` always overrides. The rule used is printed and recorded in result.json (app, app_source).
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from rpcprof.capture.fold import jitdumps
from rpcprof.errors import UserError
from rpcprof.measure.children import read_stripped, stat_fields

GO_BUILDINFO_MAGIC = b"\xff Go buildinf:"
PROTOCOL_TRAITS = "prost|tonic|tonic_prost|tower_service|tower|h2|hyper|http_body|pajamax"
GO_MODINFO = re.compile(rb"\npath\t([^\n\t]+)\nmod\t([^\n\t]+)")


@dataclass
class ProcessInfo:
    pid: int
    comm: str
    exe: str
    cmdline: list[str]
    kind: str            # native | go | python | node | jvm
    affinity: list[int]
    uid: int


def proc_state(pid: int) -> str | None:
    """One-letter state from /proc/PID/stat (R, S, D, Z...), None if there is no such process."""
    return (stat_fields(pid) or [None])[0]


def inspect_process(pid: int) -> ProcessInfo:
    """What the process is; UserError for a PID that is not a process rpcprof can profile."""
    state = proc_state(pid)
    if state is None:
        raise UserError(f"no process with pid {pid}: check the PID (pgrep -a NAME)")
    if state == "Z":
        raise UserError(f"pid {pid} is a zombie: it has exited and waits for its parent to reap it; nothing runs")
    comm = Path(f"/proc/{pid}/comm").read_text().strip()
    cmdline = [c for c in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0") if c]
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except FileNotFoundError:
        exe = ""
    except PermissionError:
        raise UserError(f"not permitted to inspect pid {pid}: " + (
            f"the kernel refuses even root its /proc/{pid}/exe (a process that is not dumpable, or of another user "
            "namespace), and would refuse a profiler the same" if os.geteuid() == 0 else
            "run as root (it belongs to another user)")) from None
    if not exe and not cmdline:
        raise UserError(f"pid {pid} ({comm}) is a kernel thread: it has no user code to profile")
    kind = "native"
    base = Path(exe).name
    maps = (read_stripped(f"/proc/{pid}/maps") or "").splitlines()
    if re.match(r"python\d*(\.\d+)?$", base) or any("libpython" in line for line in maps):
        kind = "python"
    elif base in ("node", "nodejs"):
        kind = "node"
    elif base == "java" or any(line.endswith("/libjvm.so") for line in maps):
        kind = "jvm"
    elif _is_go_binary(exe):
        kind = "go"
    uid = os.stat(f"/proc/{pid}").st_uid
    return ProcessInfo(pid, comm, exe, cmdline, kind, sorted(os.sched_getaffinity(pid)), uid)


def _is_go_binary(exe: str) -> bool:
    """Go binaries carry a build-info blob with a fixed magic."""
    return GO_BUILDINFO_MAGIC in executable_head(exe)


def choose_profiler(info: ProcessInfo, override: str | None) -> tuple[str, str, list[str]]:
    """(profiler, call graph, hints to print)."""
    hints = []
    if info.kind == "python" and override != "perf":
        hints.append("py-spy cannot see kernel time: recv/send inside syscalls are invisible to it, and it samples "
                     "only the thread holding the GIL; perf's view of the same process follows as a second profile "
                     "(--profiler perf for perf alone)")
        return "py-spy", "python", hints
    if override == "py-spy" and info.kind != "python":
        raise UserError(f"--profiler py-spy: pid {info.pid} ({info.comm}) is not a CPython process; use perf")
    if info.kind == "node":
        return "perf", node_call_graph(info, hints), hints
    if info.kind == "go":
        return "perf", "fp", hints     # perf cannot DWARF-unwind Go stacks; Go keeps frame pointers
    if info.kind == "jvm":
        return "perf", jvm_call_graph(info, hints), hints
    return "perf", "dwarf", hints


def jvm_call_graph(info: ProcessInfo, hints: list[str]) -> str:
    """Frame pointers through JIT-compiled code (kept with -XX:+PreserveFramePointer); its frames are named
    from the map `jcmd PID Compiler.perfmap` writes at the end of the window (jvm_after_profile)."""
    if "-XX:+PreserveFramePointer" not in info.cmdline:
        hints.append("the JVM was started without -XX:+PreserveFramePointer, so stacks stop at JIT-compiled frames: "
                     "restart it as `java -XX:+PreserveFramePointer ...` for whole stacks")
    if not shutil.which("jcmd"):
        hints.append("jcmd not found (tools/setup.sh --java): JIT-compiled frames stay unnamed")
    return "fp"


def jvm_after_profile(info: ProcessInfo) -> list[str] | None:
    """The command that makes a JVM write /tmp/perf-PID.map, which names its JIT frames (JDK 17+)."""
    jcmd = shutil.which("jcmd")
    return [jcmd, str(info.pid), "Compiler.perfmap"] if info.kind == "jvm" and jcmd else None


def node_call_graph(info: ProcessInfo, hints: list[str]) -> str:
    """DWARF through JS frames when V8 writes a jitdump with unwinding info, else frame pointers (hints: how to
    get whole, named stacks)."""
    flags = set(info.cmdline[1:])
    if jitdumps(info.pid) and "--perf-prof-unwinding-info" in flags:
        return "dwarf-jit"
    if not flags & {"--perf-basic-prof", "--perf-basic-prof-only-functions"}:
        hints.append("node was started without --perf-basic-prof, so JS frames show as raw addresses: restart it "
                     "as `node --perf-basic-prof ...` to see them by name")
    hints.append("frame-pointer stacks lose the callers of glibc's malloc and free (5-8 % of a gRPC server's "
                 "samples land in `other`): start node with `--perf-prof --perf-prof-unwinding-info "
                 "--interpreted-frames-native-stack` for whole DWARF stacks through JS frames")
    return "fp"


def check_permissions(info: ProcessInfo, profiler: str) -> None:
    """UserError naming the setting that forbids profiling, before anything starts."""
    if os.geteuid() == 0:
        return
    if info.uid != os.geteuid():
        raise UserError(f"not permitted to profile pid {info.pid}: it belongs to uid {info.uid}; run as root")
    if profiler == "perf":
        level = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
        if level > 1:
            raise UserError(f"not permitted to profile pid {info.pid} with perf: kernel.perf_event_paranoid is "
                            f"{level}; run as root or set it to 1 (sysctl -w kernel.perf_event_paranoid=1)")
    else:
        scope_file = Path("/proc/sys/kernel/yama/ptrace_scope")
        scope = int(scope_file.read_text()) if scope_file.exists() else 0
        if scope >= 1:
            raise UserError(f"not permitted to attach py-spy to pid {info.pid}: kernel.yama.ptrace_scope is {scope}; "
                            "run as root or set it to 0 (sysctl -w kernel.yama.ptrace_scope=0)")


def executable_head(exe: str, limit: int = 64 << 20) -> bytes:
    """The first limit bytes of an executable (b"" if it cannot be read): where its build info is."""
    try:
        with open(exe, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


def rust_app(exe: str, blob: bytes) -> tuple[str, str] | None:
    if b"/rustc/" not in blob and b"rust_begin_unwind" not in blob:
        return None
    crate = re.sub(r"\W", "_", Path(exe).name.replace("-", "_"))
    if not crate:
        return None
    regex = (rf"^<?{re.escape(crate)}::(?!(\w+::)*\w+_(server|client)::)(?!.* as ({PROTOCOL_TRAITS})::)")
    return regex, f"the Rust crate {crate} (the executable's name), without its generated gRPC code"


def go_app(blob: bytes) -> tuple[str, str] | None:
    m = GO_MODINFO.search(blob)
    if not m:
        return r"^main\.", "Go's main package (no build info found)"
    module = m.group(2).decode(errors="replace")
    return (rf"^(main\.|{re.escape(module)}/(?!(\w+/)*(pb|proto|gen)[/.]))",
            f"Go's main package and the module {module}'s own packages, without pb/proto/gen")


def python_app(cmdline: list[str], cwd: str) -> tuple[str, str] | None:
    script = next((a for a in cmdline[1:] if a.endswith(".py")), None)
    if not script:
        return None
    path = Path(script) if Path(script).is_absolute() else Path(cwd) / script
    files = sorted({p.name for p in path.parent.glob("*.py")} | {path.name})
    names = "|".join(re.escape(f) for f in files)
    return (rf"\((?:.*/)?({names}):\d+\)", f"the program's own files ({', '.join(files[:6])}"
            f"{', ...' if len(files) > 6 else ''} in {path.parent})")


def node_app() -> tuple[str, str]:
    return r"^JS:\S*\s+/(?!\S*node_modules/)", "JS from files outside node_modules and node's internals"


def guess_app(kind: str, exe: str, cmdline: list[str], cwd: str) -> tuple[str | None, str]:
    """(regex or None, where it comes from) for a process of kind native / go / python / node."""
    if kind == "python":
        found = python_app(cmdline, cwd)
    elif kind == "node":
        found = node_app()
    else:
        blob = executable_head(exe)
        found = go_app(blob) if kind == "go" else rust_app(exe, blob)
    return found or (None, "no rule for this kind of process: app stays 0 % (name it with --app REGEX)")
