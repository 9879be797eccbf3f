"""What pyproject.toml declares: every third-party package tools/rpcprof imports, and the licence."""
import ast
import importlib.metadata as md
import sys
import tomllib

from conftest import ROOT

PKG = ROOT / "tools" / "rpcprof"


def third_party_imports() -> dict[str, str]:
    """Top-level module -> the first file importing it, for every module neither in the standard library
    nor rpcprof itself."""
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "rpcprof":
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def normalise(name: str) -> str:
    return name.lower().replace("_", "-")


def test_pyproject_lists_every_package_rpcprof_imports():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {normalise(d.split(";")[0].split("[")[0].split("=")[0].split("<")[0].split(">")[0].strip())
                for d in project["dependencies"]}
    distributions = md.packages_distributions()
    imports = third_party_imports()
    assert {"click", "yaml", "jsonschema", "regex", "google", "matplotlib", "grpc"} <= set(imports)
    missing = {module: (where, distributions.get(module)) for module, where in imports.items()
               if not declared & {normalise(d) for d in distributions.get(module, [module])}}
    assert missing == {}, "imported, not in pyproject.toml's dependencies: module: (file, distribution)"


def test_the_licence_is_apache_2_0_as_the_vendored_profile_proto():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    assert "END OF TERMS AND CONDITIONS" in text
    assert text == (ROOT / "tests" / "pprof_proto" / "LICENSE").read_text()      # the standard text, as vendored
