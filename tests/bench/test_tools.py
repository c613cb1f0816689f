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
    """The names a module binds at its top level (in `if`, `try` and `with` blocks too);
    "*" when it star-imports, so that any name passes."""
    names: set[str] = set()
    statements = list(ast.parse(path.read_text()).body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.With):
            targets = [*getattr(node, "targets", []), getattr(node, "target", None)]
            targets += [item.optional_vars for item in getattr(node, "items", [])]
            for target in filter(None, targets):
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        for field in ("body", "orelse", "finalbody", "handlers"):  # if, try, with, for
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                statements.extend(getattr(node, field, []))
    return names


def unresolved(path: Path) -> list[str]:
    problems = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "bench":
            assert node.module is not None
            target = module_file(node.module)
            if target is None:
                problems.append(f"from {node.module}: no such module")
                continue
            for alias in node.names:
                defined = top_level_names(target)
                if "*" in defined or alias.name in defined:
                    continue
                if module_file(f"{node.module}.{alias.name}") is None:
                    problems.append(f"from {node.module} import {alias.name}: not defined there")
        elif isinstance(node, ast.Import):
            problems += [
                f"import {a.name}: no such module"
                for a in node.names
                if a.name.split(".")[0] == "bench" and module_file(a.name) is None
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
