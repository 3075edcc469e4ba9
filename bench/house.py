"""The shape of the house, in figures: top-level modules, import circles, big modules, long
functions, ``ws: Any`` signatures. ``python bench/house.py [SRC]`` (default ``src``) prints them;
run it on an older checkout's ``src`` to compare (issue 36's before/after counts).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def modules(src: Path) -> dict[str, Path]:
    found = {}
    for path in sorted((src / "splice").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Run-time splice imports of one module (those under ``if TYPE_CHECKING:`` left out)."""
    tree = ast.parse(path.read_text())
    skip = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for n in ast.walk(stmt)
    }
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("splice"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in known else node.module)
    return {m for m in out if m in known} - {name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that import each other (strongly connected, more than one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(src: Path) -> None:
    known = modules(src)
    graph = {m: imported(m, p, known) for m, p in known.items()}
    top = [p.name for p in (src / "splice").glob("*.py")]
    big = [m for m, p in known.items() if len(p.read_text().splitlines()) > 500]
    long_fns = 0
    ws_any = 0
    for p in known.values():
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                end = node.end_lineno or node.lineno
                long_fns += end - node.lineno + 1 > 80
                for a in node.args.args + node.args.kwonlyargs:
                    ann = a.annotation
                    ws_any += a.arg == "ws" and ann is not None and ast.unparse(ann) == "Any"
    lines = sum(len(p.read_text().splitlines()) for p in known.values())
    print(f"src: {src}  ({len(known)} modules, {lines} lines)")
    print(f"top-level modules in src/splice:  {len(top)}")
    print(
        f"top-level rooms (modules + pkgs): {len(top) + len(list((src / 'splice').glob('*/__init__.py')))}"
    )
    found = circles(graph)
    print(f"import circles:                   {len(found)}")
    for group in found:
        print("   ", " <-> ".join(g.removeprefix("splice.") for g in group))
    print(f"modules over 500 lines:           {len(big)}")
    print(f"functions over 80 lines:          {long_fns}")
    print(f"ws: Any parameters:               {ws_any}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "src"))
