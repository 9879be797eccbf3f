"""The app category of a process rpcprof did not start: its own code, found from what it is.

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

import re
from pathlib import Path

PROTOCOL_TRAITS = "prost|tonic|tonic_prost|tower_service|tower|h2|hyper|http_body|pajamax"
GO_MODINFO = re.compile(rb"\npath\t([^\n\t]+)\nmod\t([^\n\t]+)")


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
    if not found:
        return None, "no rule for this kind of process: app stays 0 % (name it with --app REGEX)"
    return found
