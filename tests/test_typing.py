"""Typed through: every parameter, field or attribute that holds a workspace (``ws``, ``rws``,
``*_ws``) is annotated with ``Workspace`` or a protocol of it (``splice.warehouse.host``,
``splice.providers.host``), never ``Any`` and never left bare; mypy checks the rest."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "splice"
WS_NAME = re.compile(r"^(r?ws|\w+_ws)$")


def protocols(root: Path = SRC) -> set[str]:
    """The names of the classes in src/splice that are protocols (a base named ``Protocol``)."""
    out = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(b).split(".")[-1] == "Protocol" for b in node.bases
            ):
                out.add(node.name)
    return out


def workspace_like(annotation: ast.expr | None, allowed: set[str]) -> bool:
    """Whether ``annotation`` is one of ``allowed`` (or it ``| None``, ``Optional[...]``)."""
    if annotation is None:
        return False
    text = ast.unparse(annotation).replace('"', "").replace("'", "")
    text = re.sub(r"^(typing\.)?Optional\[(.*)\]$", r"\2", text)
    names = {t.strip() for t in text.split("|")} - {"None"}
    return len(names) == 1 and names <= allowed


def untyped_workspaces(tree: ast.Module, allowed: set[str]) -> list[tuple[int, str, str]]:
    """(line, name, annotation) of each workspace name without a workspace-like annotation.

    >>> tree = ast.parse("def f(ws: Any, a: int, rws=None, *, head_ws: Workspace | None): ...")
    >>> untyped_workspaces(tree, {"Workspace"})
    [(1, 'ws', 'Any'), (1, 'rws', '')]
    """
    bad: list[tuple[int, str, str]] = []

    def check(line: int, name: str, annotation: ast.expr | None) -> None:
        if WS_NAME.match(name) and not workspace_like(annotation, allowed):
            bad.append((line, name, ast.unparse(annotation) if annotation else ""))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                if arg is not None:
                    check(arg.lineno, arg.arg, arg.annotation)
        elif isinstance(node, ast.AnnAssign):
            t = node.target
            if isinstance(t, ast.Name):
                check(node.lineno, t.id, node.annotation)
            elif isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self":
                check(node.lineno, t.attr, node.annotation)
    return bad


def test_every_workspace_parameter_is_typed() -> None:
    allowed = {"Workspace"} | protocols()
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        for line, name, ann in untyped_workspaces(ast.parse(path.read_text()), allowed):
            bad.append(f"{path.relative_to(SRC.parents[1])}:{line}: {name}: {ann or '(none)'}")
    assert not bad, (
        "workspace names typed Any or not at all (use Workspace, or in a package below "
        "splice.workspace a protocol such as splice.warehouse.host.WarehouseHost):\n"
        + "\n".join(bad)
    )


def test_the_low_packages_protocols_are_found() -> None:
    assert {"WarehouseHost", "ProjectsHost"} <= protocols()


def test_the_check_sees_fields_and_attributes() -> None:
    src = (
        "class C:\n"
        "    ws: Any\n"
        "    server_ws: WarehouseHost | None = None\n"
        "    def __init__(self) -> None:\n"
        "        self.ws: Optional[Any] = None\n"
        "        self.rows: Any = None\n"
    )
    found = untyped_workspaces(ast.parse(src), {"Workspace", "WarehouseHost"})
    assert found == [(2, "ws", "Any"), (5, "ws", "Optional[Any]")]
