"""The folder tree is the architecture (``splice.layers``): every module lives in a listed
package; a package imports only itself and the packages listed after it (module-level and inside
functions); the ways in call ``splice.api`` only; and no modules import each other in a circle,
between packages or inside one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from splice.layers import ENTRY, FACADE_ONLY, GROUND, PACKAGES, ROOT

SRC = Path(__file__).resolve().parents[1] / "src"
API = "splice.api"


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


def package_of(module: str) -> str | None:
    """``repair`` for splice.repair.flow; None for the modules at the top of src/splice."""
    parts = module.split(".")
    if len(parts) < 2 or module in GROUND or module in ENTRY:
        return None
    return parts[1]


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (types only: no import at run time)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def imports(name: str, path: Path, *, types: bool = True) -> list[tuple[int, str]]:
    """(line, imported module) for each splice import in the file; `from splice import api`
    is splice.api. ``types=False`` leaves out the imports under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = set() if types else _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
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
                out.append((node.lineno, sub if sub in MODULES else target))
    return out


def problem(importer: str, imported: str) -> str | None:
    """Why ``importer`` may not import ``imported``, or None when it may."""
    if importer in ENTRY or imported in GROUND:
        return None
    if imported in ENTRY:
        return "the package root is the entry point: import the module that defines the name"
    if importer in GROUND:
        return f"{importer} is ground: it may import only {', '.join(GROUND)}"
    mine, theirs = package_of(importer), package_of(imported)
    assert mine is not None and theirs is not None
    if theirs not in PACKAGES:
        return f"{imported} is in no package of splice.layers.PACKAGES"
    if mine == theirs:
        return None
    if mine in FACADE_ONLY:
        below = PACKAGES.index(theirs) > PACKAGES.index(mine)
        if imported == API or theirs == "support" or (theirs in FACADE_ONLY and below):
            return None
        return f"{mine} is a way in: it may import only {API}, splice.support and its own package"
    if PACKAGES.index(theirs) < PACKAGES.index(mine):
        return f"{mine} imports {theirs}, which is listed above it in splice.layers.PACKAGES"
    return None


def test_the_top_of_src_splice_holds_only_the_entry_and_the_ground() -> None:
    top = sorted(p.name for p in (SRC / ROOT).glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "errors.py", "layers.py", "version.py"], top


def test_every_package_is_listed_and_every_listed_package_exists() -> None:
    on_disk = {p.parent.name for p in (SRC / ROOT).glob("*/__init__.py")}
    assert on_disk == set(PACKAGES), (
        f"not in splice.layers.PACKAGES: {sorted(on_disk - set(PACKAGES))}; "
        f"listed but missing: {sorted(set(PACKAGES) - on_disk)}"
    )
    assert len(PACKAGES) == len(set(PACKAGES))


def test_no_module_imports_a_package_listed_above_its_own() -> None:
    bad = []
    for name, path in MODULES.items():
        for line, imported in imports(name, path):
            why = problem(name, imported)
            if why:
                bad.append(
                    f"{path.relative_to(SRC.parent)}:{line}: {name} imports {imported}: {why}"
                )
    assert not bad, "imports against splice.layers:\n" + "\n".join(bad)


def import_graph() -> dict[str, set[str]]:
    """module -> the modules it imports at run time (a package's ``__init__`` is not implied)."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        graph[name] = {m for _, m in imports(name, path, types=False) if m in MODULES} - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative).

    >>> circles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
    return sorted(out)


def test_no_import_circles() -> None:
    graph = import_graph()
    found = circles(graph)
    lines = []
    for group in found:
        ties = [f"{a} -> {b}" for a in group for b in sorted(graph[a]) if b in group]
        lines.append(" | ".join(ties))
    assert not found, "modules that import each other in a circle:\n" + "\n".join(lines)


@pytest.mark.parametrize(
    ("importer", "imported", "allowed"),
    [
        ("splice.cli.main", "splice.api", True),
        ("splice.cli.main", "splice.cli.render", True),
        ("splice.cli.commands", "splice.demo", True),
        ("splice.cli.main", "splice.workspace.core", False),
        ("splice.cli.main", "splice.approvals.autonomy", False),
        ("splice.demo.story", "splice.cli.main", False),
        ("splice.plan.planner", "splice.api", False),
        ("splice.run.runner", "splice.repair.recovery", False),
        ("splice.repair.flow", "splice.run.runner", True),
        ("splice.graph.model", "splice.errors", True),
        ("splice.support.clock", "splice.graph.model", False),
        ("splice.lineage.cache", "splice", False),
    ],
)
def test_the_rule_itself(importer: str, imported: str, allowed: bool) -> None:
    assert (problem(importer, imported) is None) is allowed


def test_from_splice_import_a_module_counts(tmp_path: Path) -> None:
    # `from splice import api` inside a function, in a lower package, is caught
    src = tmp_path / "flow.py"
    src.write_text("def f():\n    from splice import api\n    return api\n")
    assert imports("splice.repair.flow", src) == [(2, "splice.api")]
    assert problem("splice.repair.flow", "splice.api") is not None


def test_a_circle_is_found_with_its_ties() -> None:
    graph = {"splice.a.x": {"splice.a.y"}, "splice.a.y": {"splice.a.x"}, "splice.b.z": set()}
    assert circles(graph) == [["splice.a.x", "splice.a.y"]]


def test_no_private_name_is_imported_from_another_module() -> None:
    """A ``_name`` is its module's own: what another module needs gets a public name."""
    bad = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == ROOT:
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        bad.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: "
                                   f"{node.module}.{alias.name}")  # fmt: skip
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def package_names(init: Path) -> set[str]:
    """The names a package's ``__init__.py`` binds (imports, functions, classes, assignments)
    or lists in ``__all__``."""
    tree = ast.parse(init.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                value = node.value
                if isinstance(value, ast.List | ast.Tuple):
                    names |= {e.value for e in value.elts if isinstance(e, ast.Constant)}
    return names


def test_no_package_offers_a_name_one_of_its_modules_has() -> None:
    """Importing ``splice.pkg.name`` (anywhere, at any time) sets the package's attribute
    ``name`` to that module: a function the package offers under the same name is then gone
    for the rest of the process (the second ``splice migrate plan`` a server ran called a
    module)."""
    bad = []
    for init in sorted((SRC / ROOT).rglob("__init__.py")):
        subs = {p.stem for p in init.parent.glob("*.py") if p.stem != "__init__"}
        subs |= {d.name for d in init.parent.iterdir() if (d / "__init__.py").exists()}
        bad += [f"{module_name(init)}.{n}" for n in sorted(package_names(init) & subs)
                if not _imports_module(init, n)]  # fmt: skip
    assert not bad, "names that are both a package's offer and its module's name: " + str(bad)


def _imports_module(init: Path, name: str) -> bool:
    """Whether ``__init__.py`` binds ``name`` to the submodule itself (``from . import name``)."""
    pkg = module_name(init)
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            return node.module in (pkg, None)  # `from splice.pkg import name`, `from . import name`
    return False
