"""Every import between bench/'s tools resolves: a module a tool needs that has left the
tree (as bench/upload_files.py once left bench/blob_store.py behind it), or a name it no
longer defines, fails here rather than in the hands of the next person to run the tool.
Read with `ast`, nothing imported: importing every tool costs minutes (torch, Locust)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.tiers import ROOT


def module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def unresolved(path: Path) -> list[str]:
    problems = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench"):
            assert node.module is not None
            target = module_file(node.module)
            if target is None:
                problems.append(f"from {node.module}: no such module")
                continue
            for alias in node.names:
                if module_file(f"{node.module}.{alias.name}") is None and alias.name not in (
                    top_level_names(target)
                ):
                    problems.append(f"from {node.module} import {alias.name}: not defined there")
        elif isinstance(node, ast.Import):
            problems += [
                f"import {a.name}: no such module"
                for a in node.names
                if a.name.startswith("bench") and module_file(a.name) is None
            ]
    return problems


def test_every_bench_import_of_bench_resolves() -> None:
    found = {
        str(p.relative_to(ROOT)): problems
        for p in sorted((ROOT / "bench").rglob("*.py"))
        if (problems := unresolved(p))
    }
    assert found == {}


def test_a_module_that_left_the_tree_is_named(tmp_path: Path) -> None:
    tool = tmp_path / "tool.py"
    tool.write_text("from bench.upload_files import padded_pdf\nfrom bench.procs import nope\n")
    assert unresolved(tool) == [
        "from bench.upload_files: no such module",
        "from bench.procs import nope: not defined there",
    ]
