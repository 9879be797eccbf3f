"""The bench/ scripts run long measurements, so no test runs them; each imports names from rpcprof, and a
name moved or merged in the package must move in them too: every `from rpcprof... import NAME` of each
Python script under bench/ names something the package has."""
import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p for p in BENCH.iterdir() if p.is_file() and p.read_text(errors="replace").startswith(
    "#!/usr/bin/env python3"))


def test_there_are_python_bench_scripts():
    assert len(SCRIPTS) >= 5, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_name_a_bench_script_imports_from_rpcprof_exists(script):
    missing = []
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "rpcprof":
            module = importlib.import_module(node.module)
            for alias in node.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ModuleNotFoundError:
                        missing.append(f"{node.module}.{alias.name} (line {node.lineno})")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rpcprof":
                    importlib.import_module(alias.name)
    assert not missing, f"bench/{script.name} imports what rpcprof no longer has: {missing}"
