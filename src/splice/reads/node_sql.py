"""A node's SQL as its author wrote it and as the tool compiles it, for the node's page.

The raw SQL is the node's file in its project (dbt's ``raw_code`` is that file's text; a SQLMesh
model's file holds its ``MODEL (...)`` block and query). The compiled SQL is read without loading
a tool where the tool left it on disk: dbt writes every node it compiles or builds to
``target/compiled/PACKAGE/PATH`` (Splice's own target directory under ``.splice/dbt/``, else the
project's ``target/``). Otherwise (a SQLMesh model, a dbt model not compiled yet) it is rendered
by the tool only when asked (``render=True``) or when the tool is already loaded in this process,
through the rendered-SQL cache the column lineage uses (keyed by content, so it is rendered once).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice.errors import NodeNotFoundError

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Files larger than this are not shown on the page (the path is).
MAX_BYTES = 256 * 1024
#: Kinds whose file is code (a seed's CSV or a source's YAML is not SQL).
CODE_SUFFIXES = (".sql", ".py")


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _dbt_compiled(ws: Workspace, node: Any, project_dir: Path) -> tuple[str | None, str | None]:
    """(compiled SQL, where it was read) from dbt's target directories, newest first."""
    package = str(node.meta.get("package") or node.project)
    rel = Path(str(node.path))
    found: list[Path] = []
    roots = [
        *sorted((ws.splice_dir / "dbt" / node.project / "target").glob("*/compiled")),
        project_dir / "target" / "compiled",
    ]
    for root in roots:
        for cand in (root / package / rel, root / package / rel / f"{node.name}.sql"):
            if cand.is_file():
                found.append(cand)
    if not found:
        return None, None
    best = max(found, key=lambda p: p.stat().st_mtime)
    text = _read(best)
    return text, _shown(ws, best) if text is not None else None


def _shown(ws: Workspace, path: Path) -> str:
    try:
        return str(path.relative_to(ws.root))
    except ValueError:
        return str(path)


def node_sql(ws: Workspace, node_id: str, *, render: bool = False) -> dict[str, Any]:
    """``{"raw", "raw_path", "compiled", "compiled_from", "can_render", "note", "language"}``
    for one node (``raw``/``compiled`` None when there is none; ``note`` says why)."""
    g = ws.graph()
    node = g.nodes.get(node_id)
    if node is None:
        raise NodeNotFoundError(f"no node {node_id!r} in the graph.", fix="splice ls lists them")
    out: dict[str, Any] = {
        "raw": None,
        "raw_path": None,
        "compiled": None,
        "compiled_from": None,
        "can_render": False,
        "note": None,
        "language": node.language,
    }
    spec = next((p for p in ws.config.projects if p.name == node.project), None)
    if spec is None or node.tool not in ("dbt", "sqlmesh") or not node.path:
        out["note"] = f"a {node.kind} has no SQL of its own in a project"
        return out
    project_dir = (ws.root / spec.path).resolve()
    src = project_dir / str(node.path)
    if src.suffix in CODE_SUFFIXES:
        out["raw"] = _read(src)
        out["raw_path"] = _shown(ws, src)
    if node.language != "sql" or node.kind in ("seed", "source"):
        out["note"] = (
            "a Python model has no compiled SQL" if node.language == "python"
            else f"a {node.kind} has no SQL to compile"
        )  # fmt: skip
        return out
    if node.tool == "dbt":
        out["compiled"], out["compiled_from"] = _dbt_compiled(ws, node, project_dir)
        if out["compiled"] is not None:
            return out
    warm = any(p.ctx.project_name == node.project for p in ws.loaded_providers(spec.format))
    if render or warm:
        from splice.lineage.service import rendered_sql

        sql, _dialect, reason = rendered_sql(ws, g, [node.id])[node.id]
        out["compiled"] = sql
        out["compiled_from"] = f"rendered by {'dbt' if node.tool == 'dbt' else 'SQLMesh'}"
        if sql is None:
            out["note"] = reason or "the tool did not render it"
        return out
    out["can_render"] = True
    return out
