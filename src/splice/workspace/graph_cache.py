"""The graph cache: the joined graph kept in Splice's state, keyed by everything that
determines it, so that reading commands on an unchanged workspace load neither dbt nor SQLMesh.

The key is a SHA-256 over (:func:`graph_inputs` lists them):

- the Splice target and the environment it gives each project;
- splice.toml, and the content of every file of every project (build output, logs, caches, the
  warehouse file and Splice's own ``.splice`` directory left out: the rules of
  :func:`project_files`; and Splice's witness file, which a lone project without splice.toml
  holds in its own directory: :func:`splice_files`);
- the dbt profiles file each dbt project uses (``profiles_dir``, the project's own
  profiles.yml, ``$DBT_PROFILES_DIR`` or ``~/.dbt/profiles.yml``) and SQLMesh's user config
  (``$SQLMESH_HOME`` or ``~/.sqlmesh``: config.yaml/.yml/.py);
- the stored schemas of each dlt pipeline named by ``[[ingestion]]`` and its state file (less
  what changes on every load: ``_local`` and the state's version);
- the values of the environment variables the projects read: every name a scan of those files
  finds in ``env_var('NAME'``, ``os.environ['NAME']``, ``os.environ.get('NAME'``,
  ``getenv('NAME'``; every ``DBT_*`` and ``SQLMESH_*`` variable (the tools read those as
  options); and, when a file reads the environment with a name the scan cannot see
  (``env_var(name)``, ``dict(os.environ)``), the whole environment;
- each ``[[bi]]`` tool's last read (:mod:`splice.bi.snapshot`: asked again for its change
  markers at most once per ``refresh``);
- the installed versions of dbt-core, every dbt adapter, SQLMesh, sqlglot, DuckDB and dlt, and
  Splice's version with the size and modification time of each of its own source files.

Every file is hashed by content (no stat shortcut), so an edit is seen whatever its timestamp.
What the scan cannot see is not in the key: a Python module outside the projects that a
SQLMesh config or model imports, a macro package installed outside the project.  After
changing such a thing, ``splice --no-cache ...`` (or ``SPLICE_NO_CACHE=1``) loads the tools.

Everything is hashed with the workspace's own directory written as a placeholder
(:data:`ROOT`), wherever it occurs (a path in a file, a profile, a variable), and the stored
graph holds the placeholder too: a workspace moved or copied elsewhere with the paths that point
into it (a CI checkout at another path, a copy made by a test, ``splice demo``'s relocated
profile) finds the graph it had, with its own paths. Anything that differs beyond the location
is a different key.

The cache keeps one entry per target (kind ``graph`` of the content cache), replaced when the
key changes; the whole-workspace lineage has its own slot (:mod:`splice.lineage.service`).
Beside it, each project's nodes are kept under a key of that project's own (kind
``project_graph``, :func:`project_nodes`): when the workspace key changes, only the projects
whose own key changed are loaded through their tool again.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

KIND = "graph"
PROJECT_KIND = "project_graph"  # one entry per (target, project): project_nodes()
VERSION = "5"  # bump when the cached form or the way a graph is loaded changes
#: The workspace's directory, in the key's inputs and in the stored graph.
ROOT = "@@splice-workspace-root@@"
TOOL_PREFIXES = ("dbt", "sqlmesh", "sqlglot", "duckdb", "dlt")
ENV_PREFIXES = ("DBT_", "SQLMESH_")
# set by Splice itself before it starts a tool: never a reason to reload
OWN_ENV = frozenset(
    {"DBT_SEND_ANONYMOUS_USAGE_STATS", "DO_NOT_TRACK", "SQLMESH__DISABLE_ANONYMIZED_ANALYTICS"}
)
# what changes from one shell to the next and no project reads by a name the scan missed
VOLATILE_ENV = frozenset(
    {"_", "PWD", "OLDPWD", "SHLVL", "COLUMNS", "LINES", "PS1", "TERM_SESSION_ID"}
)

SKIP_DIRS = frozenset({"target", "logs", ".cache", "__pycache__", ".git", ".splice", ".venv"})
SKIP_SUFFIXES = (".duckdb", ".wal", ".db", ".pyc", ".log", ".tmp", ".lock")

_NAMED = re.compile(
    rb"""(?:\benv_var|\bgetenv|\benviron\.get|\benviron\.setdefault|\benviron\.pop)\s*\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]"""
    rb"""|\benviron\s*\[\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\]"""
)
_ANY = re.compile(
    rb"\benv_var\s*\(|\bgetenv\s*\(|\bos\.environ\b|\bfrom\s+os\s+import\b[^\n]*\benviron\b"
)


def env_names(text: bytes) -> tuple[set[str], bool]:
    """The environment variable names ``text`` reads, and whether it reads one the scan
    cannot name.

    >>> names, unknown = env_names(b"{{ env_var('DBT_USER') }} {{ env_var(\\"SCHEMA\\", 'x') }}")
    >>> sorted(names), unknown
    (['DBT_USER', 'SCHEMA'], False)
    >>> env_names(b"os.environ['A'] + os.environ.get('B') + os.getenv('C')")[0] == {'A', 'B', 'C'}
    True
    >>> env_names(b"{{ env_var(var('name')) }}")[1], env_names(b"dict(os.environ)")[1]
    (True, True)
    """
    names: set[str] = set()
    literal = 0
    for m in _NAMED.finditer(text):
        names.add((m.group(1) or m.group(2)).decode())
        literal += 1
    return names, len(_ANY.findall(text)) > literal


def project_files(root: Path) -> list[Path]:
    """Every file of a project that can change what the tools load: build output (target,
    logs), caches, version control, Splice's own directory, databases and logs left out."""
    out: list[Path] = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        for p in entries:
            if p.is_dir() and not p.is_symlink():
                if p.name not in SKIP_DIRS:
                    stack.append(p)
            elif p.is_file() and not p.name.endswith(SKIP_SUFFIXES):
                out.append(p)
    return sorted(out)


@functools.cache
def _dists_on_path() -> tuple[str, ...]:
    """Names of the installed distributions (``name-version``) on sys.path, from their
    dist-info / egg-info directory names (no metadata is read). Listed once per process: a
    long-lived server asks on every graph check, and the tools it runs are those it imported."""
    out: list[str] = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        out.extend(n for n in names if n.endswith((".dist-info", ".egg-info")))
    return tuple(out)


def tool_versions() -> dict[str, str]:
    """Installed name -> version of the tools that load projects (dbt-core and every dbt
    adapter, SQLMesh, sqlglot, DuckDB, dlt)."""
    out: dict[str, str] = {}
    for d in _dists_on_path():
        stem = d.rsplit(".", 1)[0]
        name, _, version = stem.partition("-")
        norm = name.lower().replace("_", "-")
        if norm.startswith(TOOL_PREFIXES):
            out.setdefault(norm, version)
    return dict(sorted(out.items()))


def splice_version() -> str:
    """Splice's version and a digest of its own source files (size and mtime), so that a
    changed Splice (an upgrade, or an edit in a development install) never reads a graph
    an older one made."""
    from splice.version import __version__

    return f"{__version__}+{_source_digest()}"


@functools.cache
def _source_digest() -> str:
    """The digest of Splice's source files, walked once per process (the code it runs is the
    code it imported; a server checks its graph's key every second)."""
    return tree_digest(Path(__file__).resolve().parents[1])  # the whole splice package


def tree_digest(pkg: Path) -> str:
    """A digest of the size and modification time of every ``.py`` file under ``pkg``."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            if f.endswith(".py"):
                st = os.stat(os.path.join(dirpath, f))
                rel = os.path.relpath(os.path.join(dirpath, f), pkg)
                h.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _dbt_profiles_file(ws: Workspace, spec: Any) -> Path:
    """The profiles.yml a dbt project is loaded with (as :class:`DbtProvider` picks it)."""
    if spec.profiles_dir:
        return (ws.root / spec.profiles_dir).resolve() / "profiles.yml"
    own = (ws.root / spec.path).resolve() / "profiles.yml"
    if own.exists():
        return own
    return Path(os.environ.get("DBT_PROFILES_DIR") or Path.home() / ".dbt") / "profiles.yml"


def _sqlmesh_home() -> Path:
    return Path(os.environ.get("SQLMESH_HOME") or Path.home() / ".sqlmesh")


def _dlt_state(path: Path) -> str:
    """What a dlt pipeline's state.json says that the graph reads (dataset, destination,
    schemas), without what changes on every load (``_local``, the state's version)."""
    import json

    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return "(absent)" if not path.exists() else hashlib.sha256(path.read_bytes()).hexdigest()
    if not isinstance(data, dict):
        return repr(data)
    for volatile in ("_local", "_state_version", "_version_hash"):
        data.pop(volatile, None)
    return json.dumps(data, sort_keys=True, default=str)


def without_root(text: str, root: Path | str) -> str:
    """``text`` with the workspace directory ``root`` written as :data:`ROOT`.

    >>> without_root("path: /srv/ws/warehouse.duckdb (not /srv/ws2)", "/srv/ws")
    'path: @@splice-workspace-root@@/warehouse.duckdb (not /srv/ws2)'
    """
    return _root_pattern(str(root).rstrip("/") or "/").sub(ROOT, text)


def with_root(text: str, root: Path | str) -> str:
    """The inverse of :func:`without_root` for ``root``.

    >>> with_root(without_root("/a/b/c.sql", "/a/b"), "/x/y")
    '/x/y/c.sql'
    """
    return text.replace(ROOT, str(root))


@functools.lru_cache(maxsize=8)
def _root_pattern(root: str) -> re.Pattern[str]:
    # the directory itself, or followed by a separator: never a longer name (/srv/ws2)
    return re.compile(re.escape(root) + r"(?=[/\\\"'\s:;,)\]}]|$)")


class _Hasher:
    def __init__(self, root: Path | str) -> None:
        self.h = hashlib.sha256()
        self.env: set[str] = set()
        self.whole_env = False
        self.files = 0
        self.root = str(root)
        self.root_bytes = self.root.encode()

    def text(self, label: str, value: object) -> None:
        self.h.update(without_root(f"\0{label}={value}\0", self.root).encode())

    def file(self, label: str, path: Path, *, scan: bool = True) -> None:
        try:
            data = path.read_bytes()
        except OSError:
            self.text(label, "(absent)")
            return
        if self.root_bytes in data:
            data = without_root(data.decode("utf-8", "surrogateescape"),
                                self.root).encode("utf-8", "surrogateescape")  # fmt: skip
        self.text(label, len(data))
        self.h.update(data)
        self.files += 1
        if scan:
            names, dynamic = env_names(data)
            self.env |= names
            self.whole_env |= dynamic


def splice_files(ws: Workspace) -> frozenset[Path]:
    """Files Splice itself writes in the workspace that no tool reads: the state's witness
    (moved by every command that writes the state), and the state file when it lies outside
    ``.splice``. A project whose directory is the workspace's (a bare dbt or SQLMesh project
    without splice.toml) would otherwise see its key change after each command."""
    out = {ws.witness_path}
    if not ws.config.state.url:
        out.add(ws.state_path)
    return frozenset(out)


def graph_inputs(ws: Workspace) -> tuple[str, dict[str, Any]]:
    """(the graph key of ``ws``, a summary of what went into it). The summary's ``projects``
    holds each project's own key (:func:`project_key`'s rules), taken in the same pass."""
    from splice.config.workspace import CONFIG_FILE

    t0 = time.perf_counter()
    base = _Hasher(ws.root)  # what every project's load depends on
    versions = tool_versions()
    own = splice_version()
    environments = {p.name: ws.environment(p.name) for p in ws.config.projects}
    base.text("cache", VERSION)
    base.text("target", ws.target)
    base.text("environments", sorted(environments.items()))
    base.text("splice", own)
    base.text("tools", sorted(versions.items()))
    base.file("config", ws.root / CONFIG_FILE)
    profiles: list[str] = []
    own_files = splice_files(ws)
    groups: dict[str, _Hasher] = {}  # each tool's projects, with what that tool reads besides
    for spec in sorted(ws.config.projects, key=lambda s: s.name):
        hs = groups.setdefault(spec.format, _Hasher(ws.root))
        root = (ws.root / spec.path).resolve()
        hs.text("project", f"{spec.name}:{spec.format}:{root}")
        for f in project_files(root):
            if f not in own_files:
                hs.file(str(f.relative_to(root)), f)
        if spec.format == "dbt":
            prof = _dbt_profiles_file(ws, spec)
            profiles.append(str(prof))
            hs.file(f"profiles {prof}", prof)
    if "dbt" in groups and not ws.has_config:
        groups["dbt"].file("home profiles", Path.home() / ".dbt" / "profiles.yml")
    if "sqlmesh" in groups:
        home = _sqlmesh_home()
        for name in ("config.yaml", "config.yml", "config.py"):
            groups["sqlmesh"].file(f"sqlmesh home {name}", home / name)
    rest = _Hasher(ws.root)  # what only the joined graph depends on
    for job in ws.config.ingestion:
        if job.orchestrated and not job.writes:  # its assets, as last read
            kept = ws.root / ".splice" / "orchestrators" / f"{job.name}.json"
            rest.file(f"orchestrator {job.name} assets", kept, scan=False)
        if job.runner != "command" and job.pipeline_name:
            pdir = ws.root / (job.pipelines_dir or ".dlt/pipelines") / job.pipeline_name
            rest.text(f"dlt {job.name} state", _dlt_state(pdir / "state.json"))
            schemas = pdir / "schemas"
            for f in sorted(schemas.glob("*")) if schemas.is_dir() else []:
                rest.file(f"dlt {job.name} {f.name}", f, scan=False)
    if ws.config.bi:  # each BI tool's last read, asked again as [[bi]] refresh says
        from splice.bi.snapshot import refresh, snapshot_path

        for cfg in ws.config.bi:
            refresh(ws.root, cfg)
            rest.file(f"bi {cfg.name}", snapshot_path(ws.root, cfg.name), scan=False)
    everything = [base, *(groups[f] for f in sorted(groups)), rest]
    names, whole = _env_names([base, *groups.values()])
    # the key: what the graph depends on, wherever the workspace is; and where it is, for the
    # caches of what may name the location (doctor's findings, the lineage, the no-op memo)
    where = hashlib.sha256(str(ws.root).encode()).hexdigest()[:16]
    key = f"{_digest(everything, names)}.{where}"
    projects: dict[str, str] = {}
    for fmt, hs in groups.items():
        own_names, _ = _env_names([base, hs])
        content = _digest([base, hs], own_names)
        for spec in ws.config.projects:
            if spec.format == fmt:
                projects[spec.name] = hashlib.sha256(f"{content}|{spec.name}".encode()).hexdigest()
    return key, {
        "key": key,
        "files": sum(h.files for h in everything),
        "profiles": profiles,
        "env": sorted(names) if not whole else "(the whole environment)",
        "tools": versions,
        "splice": own,
        "projects": projects,
        "seconds": round(time.perf_counter() - t0, 4),
    }


def _env_names(hashers: list[_Hasher]) -> tuple[set[str], bool]:
    """The environment variables what ``hashers`` read can see (every ``DBT_*`` and
    ``SQLMESH_*`` among them; the whole environment when a file reads a name the scan cannot
    see), and whether that is the whole environment."""
    env = os.environ
    whole = any(h.whole_env for h in hashers)
    if whole:
        names = {n for n in env if n not in VOLATILE_ENV}
    else:
        names = set().union(*(h.env for h in hashers)) | {
            n for n in env if n.startswith(ENV_PREFIXES)
        }
    return names - OWN_ENV, whole


def _digest(hashers: list[_Hasher], names: set[str]) -> str:
    h = hashlib.sha256()
    for part in hashers:
        h.update(part.h.digest())
    env = os.environ
    h.update(without_root(repr(sorted((n, env.get(n)) for n in names)), hashers[0].root).encode())
    return h.hexdigest()


def graph_key(ws: Workspace) -> str:
    """The graph key of ``ws``: ``CONTENT.LOCATION``. The graph cache compares the content part
    only (:func:`content_part`), so a moved workspace finds its graph; every other cache keyed by
    it sees a moved workspace as another."""
    return graph_inputs(ws)[0]


def content_part(key: str) -> str:
    """The part of a graph key that does not depend on where the workspace is.

    >>> content_part("ab12.cd34")
    'ab12'
    """
    return key.split(".", 1)[0]


def lookup(ws: Workspace, key: str) -> Any:
    """The cached graph of ``ws.target`` if it was stored under ``key``, else None."""
    from splice.graph.serial import graph_from_dict

    hit = ws.state.cache_get_many(KIND, [ws.target]).get(ws.target)
    if not isinstance(hit, dict) or hit.get("key") != content_part(key):
        return None
    try:
        import json

        text = hit["graph"]
        data = json.loads(with_root(text, _json_text(ws.root))) if isinstance(text, str) else text
        return graph_from_dict(data)
    except (KeyError, TypeError, ValueError):  # a damaged entry: load the tools instead
        return None


def store(ws: Workspace, key: str, graph: Any) -> bool:
    """Keep ``graph`` under ``key`` (replacing the target's previous entry), and the nodes of
    each project this Workspace loaded through its tool under that project's key
    (:func:`project_nodes`). False when the graph holds a value plain JSON cannot carry (then
    nothing is cached)."""
    import json

    from splice.graph.serial import NotSerialisable, graph_to_dict

    try:
        data = graph_to_dict(graph)
    except NotSerialisable:
        return False
    root = _json_text(ws.root)
    text = without_root(json.dumps(data), root)  # the graph, wherever it is
    entry = {"key": content_part(key), "made_at": time.time(), "graph": text}
    ws.state.cache_put_many(KIND, {ws.target: entry})
    keys = ws.project_keys or {}
    loaded = {name: ids for name, ids in ws.loaded_projects.items() if name in keys}
    if loaded:
        by_id = {n["id"]: n for n in data["nodes"]}
        ws.state.cache_put_many(PROJECT_KIND, {
            _slot(ws, name): {"key": keys[name], "made_at": time.time(),
                              "nodes": without_root(json.dumps([by_id[i] for i in ids]), root)}
            for name, ids in loaded.items()
        })  # fmt: skip
    return True


def project_nodes(ws: Workspace) -> dict[str, list[Any]]:
    """Project name -> its nodes as its tool last loaded them, for each project of ``ws``
    whose own key (the ``projects`` of :func:`graph_inputs`) is unchanged since: the projects
    that changed are loaded again, the others are not (one dbt model edited in a workspace
    with a SQLMesh project beside it loads dbt alone).

    A project's key covers what the whole graph key covers for it: the Splice target, the
    environments, splice.toml, the tools' and Splice's versions, the files of every project
    of the same tool (a dbt local package or a SQLMesh multi-repo may read a sibling), that
    tool's profiles or user config, and the environment variables those files read."""
    import json

    from splice.graph.serial import from_data

    keys = ws.project_keys or {}
    slots = {_slot(ws, name): name for name in keys}
    out: dict[str, list[Any]] = {}
    for slot, hit in ws.state.cache_get_many(PROJECT_KIND, list(slots)).items():
        name = slots.get(slot)
        if name is None or not isinstance(hit, dict) or hit.get("key") != keys[name]:
            continue
        try:
            rows = json.loads(with_root(hit["nodes"], _json_text(ws.root)))
            out[name] = [from_data(r) for r in rows]
        except (KeyError, TypeError, ValueError):  # a damaged entry: load the tool instead
            continue
    return out


def _slot(ws: Workspace, project: str) -> str:
    return f"{ws.target}|{project}"


def _json_text(root: Path | str) -> str:
    """``root`` as it is written inside a JSON string."""
    import json

    return json.dumps(str(root))[1:-1]
