"""One approvals package (``splice.approvals``) that repair, grants and migrate all use: each
request's package imports the shared rules, and none imports another's modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "splice"
REQUESTS = ("repair", "grants", "migrate")


def _imports(path: Path) -> set[str]:
    """Every ``splice.*`` module a file imports (module level and inside functions)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m.startswith("splice.")}


def _modules(package: str) -> dict[str, Path]:
    return {
        "splice." + ".".join(p.relative_to(SRC).with_suffix("").parts): p
        for p in sorted((SRC / package).rglob("*.py"))
    }


@pytest.mark.parametrize("package", [*REQUESTS, "auth"])
def test_no_request_imports_another_requests_modules(package: str) -> None:
    others = [f"splice.{p}." for p in REQUESTS if p != package]
    bad = sorted(
        (name, imported)
        for name, path in _modules(package).items()
        for imported in _imports(path)
        if imported.startswith(tuple(others))
    )
    assert not bad, f"splice.{package} reaches into another request's package: {bad}"


@pytest.mark.parametrize("package", REQUESTS)
def test_every_request_follows_the_shared_rules(package: str) -> None:
    used = set().union(*(_imports(p) for p in _modules(package).values()))
    assert "splice.approvals.rules" in used
