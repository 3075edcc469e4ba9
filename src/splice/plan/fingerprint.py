"""Fingerprints: per node, a dict of components -> hash.

A node's fingerprint is what its build depends on, split into named components so a plan can
say *which* part changed ("code_changed: sql, macros").

dbt models, seeds and snapshots (read from the manifest dbt already parsed for the graph):

=========  ==================================================================================
sql        dbt's own checksum of the raw code (the file hash for a seed)
config     the materialization and every config key that changes what is built (the relation
           name included); ``tags``, ``meta``, ``docs`` and similar are left out
macros     the macros it depends on (``depends_on.macros``), with the macros they call, recursively
contract   the enforced contract (column names, types, constraints); constant when not enforced
=========  ==================================================================================

SQLMesh models: SQLMesh's own snapshot fingerprint, which is authoritative inside its project:
``data`` (data hash), ``metadata`` (metadata hash), ``parent_data``, ``parent_metadata`` and
``snapshot`` (the snapshot identifier, which changes with any of them).

Any other node (or a dbt node whose manifest is not at hand) gets a fallback fingerprint from
the graph's own fields: ``sql`` (the SQL or checksum the provider recorded) and ``config`` (the
materialization).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from splice.graph.model import Node

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Node kinds Splice builds (tests and audits run with the nodes they check).
BUILDABLE_KINDS = frozenset({"model", "seed", "snapshot"})
#: Tools whose nodes Splice builds through an executor.
BUILD_TOOLS = frozenset({"dbt", "sqlmesh"})

#: dbt config keys that do not change what a build produces.
_IGNORED_CONFIG = frozenset(
    {
        "enabled",
        "tags",
        "meta",
        "docs",
        "group",
        "access",
        "persist_docs",
        "packages",
        "static_analysis",
        "concurrent_batches",
        "description",
    }
)

SQLMESH_COMPONENTS = ("data", "metadata", "parent_data", "parent_metadata", "snapshot")


def is_buildable(node: Node) -> bool:
    """True for the nodes Splice builds: dbt/SQLMesh models, seeds and snapshots."""
    return node.kind in BUILDABLE_KINDS and node.tool in BUILD_TOOLS


def digest(value: Any) -> str:
    """A short, stable hash of a JSON-able value.

    >>> digest({"b": 1, "a": [1, 2]}) == digest({"a": [1, 2], "b": 1})
    True
    >>> len(digest("x"))
    16
    """
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- dbt ---------------------------------------------------------------------------------------
class _MacroHasher:
    """Hashes of macros with their callees (recursively), cached per manifest."""

    def __init__(self, manifest: Any) -> None:
        self.macros = getattr(manifest, "macros", {}) or {}
        self.cache: dict[str, str] = {}

    def of(self, uid: str, _stack: frozenset[str] = frozenset()) -> str:
        if uid in self.cache:
            return self.cache[uid]
        mac = self.macros.get(uid)
        if mac is None:
            return digest(f"missing:{uid}")
        if uid in _stack:  # a macro cycle: hash its own text only
            return digest(mac.macro_sql or "")
        callees = sorted(getattr(mac.depends_on, "macros", None) or [])
        inner = [self.of(c, _stack | {uid}) for c in callees]
        h = digest([uid, mac.macro_sql or "", inner])
        self.cache[uid] = h
        return h


_HASHERS: dict[int, tuple[Any, _MacroHasher]] = {}


def _hasher(manifest: Any) -> _MacroHasher:
    key = id(manifest)
    hit = _HASHERS.get(key)
    if hit is None or hit[0] is not manifest:
        _HASHERS.clear()  # one manifest per project at a time is the common case
        hit = (manifest, _MacroHasher(manifest))
        _HASHERS[key] = hit
    return hit[1]


def _config_value(v: Any) -> Any:
    if hasattr(v, "to_dict"):
        return v.to_dict()
    return v


def dbt_fingerprint(manifest_node: Any, manifest: Any) -> dict[str, str]:
    """The fingerprint of one dbt manifest node (model, seed or snapshot)."""
    checksum = getattr(manifest_node, "checksum", None)
    sql = (
        checksum.checksum
        if checksum is not None and checksum.checksum
        else (getattr(manifest_node, "raw_code", None) or "")
    )
    cfg = manifest_node.config.to_dict() if hasattr(manifest_node.config, "to_dict") else {}
    config = {k: _config_value(v) for k, v in cfg.items() if k not in _IGNORED_CONFIG}
    config["relation_name"] = getattr(manifest_node, "relation_name", None)
    config["language"] = str(getattr(manifest_node, "language", "") or "")
    macros = sorted(getattr(manifest_node.depends_on, "macros", None) or [])
    hasher = _hasher(manifest)
    contract_obj = getattr(manifest_node, "contract", None)
    enforced = bool(getattr(contract_obj, "enforced", False))
    contract: list[Any] = [enforced]
    if enforced:
        for c in (getattr(manifest_node, "columns", None) or {}).values():
            constraints = [
                x.to_dict() if hasattr(x, "to_dict") else str(x) for x in c.constraints or []
            ]
            contract.append([c.name, c.data_type, constraints])
    return {
        "sql": digest(str(sql)),
        "config": digest(config),
        "macros": digest([hasher.of(m) for m in macros]),
        "contract": digest(contract),
    }


# -- SQLMesh -------------------------------------------------------------------------------------
def sqlmesh_fingerprint(snapshot: Any) -> dict[str, str]:
    """The fingerprint of a SQLMesh snapshot: SQLMesh's own hashes."""
    fp = snapshot.fingerprint
    return {
        "data": str(fp.data_hash),
        "metadata": str(fp.metadata_hash),
        "parent_data": str(fp.parent_data_hash),
        "parent_metadata": str(fp.parent_metadata_hash),
        "snapshot": str(snapshot.snapshot_id.identifier),
    }


# -- any node ------------------------------------------------------------------------------------
def fallback_fingerprint(node: Node) -> dict[str, str]:
    """A fingerprint from the graph's own fields, for a node whose tool is not at hand."""
    code = node.meta.get("checksum") or node.sql or node.path or ""
    return {
        "sql": digest(str(code)),
        "config": digest([node.materialization, node.writes.key if node.writes else None]),
    }


def changed_components(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Components whose hash differs (present in one and not the other counts as changed).

    >>> changed_components({"sql": "a", "config": "b"}, {"sql": "a", "config": "c", "macros": "d"})
    ['config', 'macros']
    """
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def fingerprints(ws: Workspace, node_ids: Iterable[str]) -> dict[str, dict[str, str]]:
    """Fingerprints of the given buildable nodes of a workspace (others are skipped).

    The runner calls this after a node succeeds, to record what it built. SQLMesh nodes are
    fingerprinted from the snapshots of the project's current files (``Context.snapshots``),
    which is what a plan applies.
    """
    g = ws.graph()
    wanted = [g.nodes[i] for i in node_ids if i in g.nodes and is_buildable(g.nodes[i])]
    out: dict[str, dict[str, str]] = {}
    by_project: dict[str, list[Node]] = {}
    for n in wanted:
        by_project.setdefault(n.project, []).append(n)
    for project, nodes in by_project.items():
        prov = ws.provider(project)
        if nodes[0].tool == "dbt":
            manifest = prov._parse()  # parsed already, unless the graph came from the cache
            for n in nodes:
                mnode = manifest.nodes.get(str(n.meta.get("unique_id"))) if manifest else None
                out[n.id] = (
                    dbt_fingerprint(mnode, manifest)
                    if mnode is not None
                    else fallback_fingerprint(n)
                )
        else:
            from splice.support.capture import captured

            with captured(ws.log_path, f"sqlmesh snapshots ({project})", cwd=prov.run_dir):
                snaps = prov.context.snapshots
            for n in nodes:
                snap = snaps.get(str(n.meta.get("fqn")))
                out[n.id] = (
                    sqlmesh_fingerprint(snap) if snap is not None else fallback_fingerprint(n)
                )
    return out
