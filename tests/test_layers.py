"""Every import in src/splice (module-level and inside functions) respects splice.layers: no
module imports a layer above its own; the CLI, MCP tools, server and demo call splice.api only;
the infrastructure imports only itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from splice.layers import (
    API,
    FACADE_ONLY,
    INFRASTRUCTURE,
    LAYERS,
    ROOT,
    ROOT_NAMES,
    layer_of,
    package_of,
    rank,
)

SRC = Path(__file__).resolve().parents[1] / "src"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        if all((d / "__init__.py").exists() for d in path.parents if d >= SRC / ROOT):
            found[module_name(path)] = path
    return found


MODULES = modules()


def imports(name: str, path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for each splice import in the file; `from splice import api`
    is splice.api, `from splice import __version__` is the root reading a name."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == ROOT]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    out.append((node.lineno, sub))
                elif target == ROOT and alias.name in ROOT_NAMES:
                    continue  # any module may read splice.__version__
                else:
                    out.append((node.lineno, target))
    return out


def problem(importer: str, imported: str) -> str | None:
    """Why ``importer`` may not import ``imported``, or None when it may."""
    mine, theirs = layer_of(importer), layer_of(imported)
    if theirs is None:
        return f"{imported} is in no layer of splice.layers"
    assert mine is not None
    if mine == "infrastructure":
        if theirs != "infrastructure":
            return f"infrastructure imports layer {theirs!r}; it may import only infrastructure"
        return None
    if mine in FACADE_ONLY:
        own = package_of(importer) == package_of(imported)
        facade_below = theirs in FACADE_ONLY and rank(imported) >= rank(importer)
        if imported == API or theirs == "infrastructure" or own or facade_below:
            return None
        return f"layer {mine!r} may import only {API}, infrastructure and its own package"
    if rank(imported) < rank(importer):
        return f"layer {mine!r} imports the higher layer {theirs!r}"
    return None


def test_every_module_is_placed_in_a_layer() -> None:
    unplaced = [m for m in MODULES if layer_of(m) is None]
    assert not unplaced, f"add these modules to splice.layers: {unplaced}"


def test_infrastructure_and_layers_name_real_modules() -> None:
    prefixes = list(INFRASTRUCTURE) + [p for _, ps in LAYERS for p in ps]
    future = {"splice.mcp", "splice.serve"}  # interfaces still to come
    missing = [p for p in prefixes if p not in MODULES and p not in future]
    assert not missing, f"splice.layers names modules that do not exist: {missing}"


def test_no_module_imports_a_higher_layer() -> None:
    bad = []
    for name, path in MODULES.items():
        for line, imported in imports(name, path):
            why = problem(name, imported)
            if why:
                bad.append(
                    f"{path.relative_to(SRC.parent)}:{line}: {name} imports {imported}: {why}"
                )
    assert not bad, "imports against splice.layers:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("importer", "imported", "allowed"),
    [
        ("splice.cli.main", "splice.api", True),
        ("splice.cli.main", "splice.cli.render", True),
        ("splice.cli.commands", "splice.demo", True),
        ("splice.cli.main", "splice.workspace", False),
        ("splice.cli.main", "splice.repair.autonomy", False),
        ("splice.demo.story", "splice.cli.main", False),
        ("splice.plan.planner", "splice.api", False),
        ("splice.run.runner", "splice.repair.recovery", False),
        ("splice.repair.flow", "splice.run.runner", True),
        ("splice.errors", "splice.graph.model", False),
        ("splice.graph.model", "splice.errors", True),
    ],
)
def test_the_rule_itself(importer: str, imported: str, allowed: bool) -> None:
    assert (problem(importer, imported) is None) is allowed


def test_from_splice_import_a_module_counts(tmp_path: Path) -> None:
    # `from splice import api` inside a function, in a lower layer, is caught
    flow = MODULES["splice.repair.flow"]
    src = tmp_path / "flow.py"
    src.write_text("def f():\n    from splice import api, __version__\n    return api\n")
    assert imports("splice.repair.flow", src) == [(2, "splice.api")]
    assert problem("splice.repair.flow", "splice.api") is not None
    assert flow.exists()
