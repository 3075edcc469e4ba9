"""dbt projects, through dbtRunner in process (no subprocess, no second parse where avoidable)."""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path
from typing import Any

from splice.errors import ProjectError
from splice.graph.model import Node
from splice.graph.relations import parse_relation
from splice.providers.base import Capabilities, LoadContext, RenderedSQL
from splice.providers.dbt_manifest import (
    KINDS,
    column_descriptions,
    extra_nodes,
    key_meta,
    node_names,
    owner_of,
    reads_files,
    seed_columns,
    selector_for,
    time_spine_meta,
    version_meta,
)
from splice.support.capture import captured
from splice.support.faults_env import locked_error

CAPABILITIES = Capabilities(exact_selection=True, owns_state=False, renders_sql=True)

#: ``dbt parse`` in a child process (:meth:`DbtProvider.prewarm`)
_PARSE_CHILD = (
    "import sys\n"
    "from dbt.cli.main import dbtRunner\n"
    "sys.exit(0 if dbtRunner().invoke(sys.argv[1:]).success else 1)\n"
)


def quiet_env() -> None:
    """Keep dbt from sending usage statistics (unless the environment says otherwise)."""
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")


def release_warehouse() -> None:
    """dbt-duckdb keeps the DuckDB file open after invoke(); release it (see STACK.md)."""
    import sys

    if "dbt.adapters.duckdb.connections" not in sys.modules:
        return  # dbt never ran in this process: nothing to release (and no 1 s import)
    try:
        from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    except ImportError:  # pragma: no cover - dbt-duckdb is a pinned dependency
        return
    DuckDBConnectionManager.close_all_connections()


def profiles_dir(ctx: LoadContext) -> Path:
    """Where dbt reads profiles.yml for this project: splice.toml's ``profiles_dir``, else the
    project directory when it holds one, else ``$DBT_PROFILES_DIR``, else ``~/.dbt``."""
    explicit = ctx.options.get("profiles_dir")
    if explicit:
        return Path(str(explicit))
    if (ctx.project_path / "profiles.yml").exists():
        return ctx.project_path
    return Path(os.environ.get("DBT_PROFILES_DIR") or Path.home() / ".dbt")


def check_target(ctx: LoadContext) -> None:
    """Refuse, before dbt runs, a profile that has no output for the target Splice maps to.

    Reads dbt_project.yml's ``profile`` and profiles.yml's outputs (plain YAML, no dbt import;
    a profile chosen or built by Jinja is left to dbt). The error names the splice.toml key
    that maps Splice's target to the profile's target, when there is a splice.toml
    (``ctx.options["environments_key"]``).
    """
    import yaml

    prof_file = profiles_dir(ctx) / "profiles.yml"
    try:
        project = yaml.safe_load((ctx.project_path / "dbt_project.yml").read_text())
        profiles = yaml.safe_load(prof_file.read_text())
    except (OSError, yaml.YAMLError):
        return  # missing or broken: dbt's own error says which and where
    if not isinstance(project, dict) or not isinstance(profiles, dict):
        return
    profile = profiles.get(str(project.get("profile")))
    outputs = profile.get("outputs") if isinstance(profile, dict) else None
    env = ctx.environment
    if not isinstance(outputs, dict) or env in outputs or any("{{" in str(k) for k in outputs):
        return
    available = ", ".join(sorted(map(str, outputs))) or "none"
    head = (
        f"dbt project {ctx.project_name!r}: profile {project.get('profile')!r} in "
        f"{prof_file} has no target {env!r} (its targets: {available})"
    )
    key = ctx.options.get("environments_key")
    if key:
        first = sorted(map(str, outputs))[0] if outputs else "dev"
        how = (
            f"{key} maps Splice target {ctx.target!r} to it"
            if env != ctx.target
            else f"nothing in {key} maps Splice target {ctx.target!r}, so dbt runs "
            "the target of the same name"
        )
        raise ProjectError(
            f"{head}; {how}.",
            fix=f"map it to one of the profile's targets there, e.g. environments = "
            f'{{ {ctx.target} = "{first}" }}, or add an output {env!r} to {prof_file}',
        )
    raise ProjectError(
        f"{head}.", fix=f"pass --target with one of: {available} (or add that output)"
    )


#: what a dbt parse writes besides its partial parse (:meth:`DbtProvider.artifacts`)
ARTIFACTS = ("manifest.json", "semantic_manifest.json")


class DbtProvider:
    format = "dbt"
    capabilities = CAPABILITIES
    #: :meth:`prewarm` only for a project with at least this many model files
    PREWARM_MIN_MODELS = 200

    def __init__(self, ctx: LoadContext) -> None:
        self.ctx = ctx
        self.manifest: Any = None
        self._prewarm: Any = None  # the child parsing this project (prewarm), until waited on
        #: a directory holding a prod manifest.json: builds then defer what they do not select
        #: to it (``dbt build --defer --state``), as a review build in an isolated target does
        self.defer_state: Path | None = None
        self.work = ctx.work_dir or (ctx.root / ".splice" / "dbt" / ctx.project_name)
        self.profiles_dir = profiles_dir(ctx)
        check_target(ctx)

    @property
    def log_dir(self) -> Path:
        """Where dbt writes its own log file (dbt.log): beside Splice's log of the tools'
        output, in ``.splice/logs/``, so every tool's log is in one place."""
        if self.ctx.log_path is not None:
            return self.ctx.log_path.parent / "dbt" / self.ctx.project_name
        return self.work / "logs"

    def warehouse(self) -> Any:
        """Where this project's warehouse is (a :class:`~splice.providers.locations.WarehouseLocation`,
        or None when the profile can't be read), resolved as dbt-duckdb resolves it when run in
        the project directory; reads profiles.yml only."""
        from splice.providers.locations import dbt_location

        return dbt_location(
            self.ctx.project_name, self.ctx.project_path, self.profiles_dir, self.ctx.environment
        )

    # -- invoking dbt -------------------------------------------------------------------------
    def _args(self, command: str) -> list[str]:
        return [
            command,
            "--project-dir",
            str(self.ctx.project_path),
            "--profiles-dir",
            str(self.profiles_dir),
            "--target",
            self.ctx.environment,
            "--target-path",
            str(self.work / "target" / self.ctx.environment),
            "--log-path",
            str(self.log_dir),
            "--log-level",
            "none",
            "--log-level-file",
            "info",
        ]

    def invoke(self, args: list[str], *, label: str) -> Any:
        from dbt.cli.main import dbtRunner

        quiet_env()
        runner = dbtRunner(manifest=self.manifest) if self.manifest is not None else dbtRunner()
        with captured(
            self.ctx.log_path,
            f"dbt {' '.join(args[:1])} ({self.ctx.project_name})",
            cwd=self.ctx.project_path,
        ) as out:
            try:
                res = runner.invoke(args)
            finally:
                release_warehouse()
        if not res.success and res.exception is not None:
            err = locked_error(res.exception, f"dbt project {self.ctx.project_name!r}")
            if err:
                raise err
            text = str(res.exception)
            fix = (
                "fix the file dbt names, then check with `dbt parse` in that directory; "
                "rerun with -v to see dbt's output"
            )
            if "dbt deps" in text:  # packages.yml lists packages that are not installed
                fix = f"run `dbt deps` in {self.ctx.project_path} to install the packages of packages.yml"
            raise ProjectError(
                f"dbt project {self.ctx.project_name!r} ({self.ctx.project_path}) failed to {label}: "
                f"{_first_lines(text)}",
                fix=fix,
            )
        res.captured = out.getvalue()  # type: ignore[attr-defined]
        return res

    def prewarm(self) -> Any:
        """Start ``dbt parse`` of this project in a child process, when dbt has no partial
        parse of it yet (the first load): the loader loads the workspace's other projects
        meanwhile, on the other core, and this project's own parse then reads what the child
        wrote (dbt's partial parsing), at a fraction of a full parse. Returns the child (wait
        for it before :meth:`load`), or None when there is nothing to gain. The child's
        failure is never reported: the parse in this process says what is wrong."""
        import subprocess
        import sys

        target = self.work / "target" / self.ctx.environment
        if self.manifest is not None or (target / "partial_parse.msgpack").exists():
            return None
        if not (self.ctx.project_path / "dbt_project.yml").exists():
            return None
        files = itertools.chain.from_iterable(
            (self.ctx.project_path / d).rglob("*.sql") for d in _model_paths(self.ctx.project_path)
        )
        if (
            sum(1 for _ in itertools.islice(files, self.PREWARM_MIN_MODELS))
            < self.PREWARM_MIN_MODELS
        ):
            return None  # a small project parses in seconds: a second process costs more
        quiet_env()
        self._prewarm = subprocess.Popen(  # noqa: S603 - dbt itself, with this provider's arguments
            [sys.executable, "-c", _PARSE_CHILD, *self._args("parse")],
            cwd=self.ctx.project_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        return self._prewarm

    def _parse(self) -> Any:
        if self.manifest is None:
            if not (self.ctx.project_path / "dbt_project.yml").exists():
                raise ProjectError(
                    f"dbt project {self.ctx.project_name!r}: no dbt_project.yml in {self.ctx.project_path}.",
                    fix="point projects.path at the directory that holds dbt_project.yml",
                )
            # no manifest.json here (a quarter of a 2,000-model parse): Splice reads the
            # manifest in memory, and writes the files when something reads them (artifacts())
            args = [*self._args("parse"), "--no-write-json"]
            child, self._prewarm = self._prewarm, None
            # the child wrote manifest.json and the partial parse just now: this parse reads
            # the latter, and its files are this parse's
            fresh = child is not None and child.wait() == 0
            res = self.invoke(args, label="parse")
            if not res.success or res.result is None:
                raise ProjectError(
                    f"dbt project {self.ctx.project_name!r} failed to parse.",
                    fix="run `dbt parse` in the project to see why; rerun with -v for dbt's output",
                )
            self.manifest = res.result
            if not fresh:  # an earlier parse's files: never read as this one's
                for name in ARTIFACTS:
                    (self.target_dir / name).unlink(missing_ok=True)
        return self.manifest

    @property
    def target_dir(self) -> Path:
        """dbt's target directory for this project and target, in Splice's own directory."""
        return self.work / "target" / self.ctx.environment

    def artifacts(self) -> Path:
        """:attr:`target_dir` with dbt's ``manifest.json`` and ``semantic_manifest.json`` of
        the project as it is now (written from the manifest in memory when the last parse
        left them out; parsed first when no parse wrote them)."""
        path = self.target_dir
        if not all((path / name).exists() for name in ARTIFACTS):
            from dbt.parser.manifest import write_manifest

            manifest = self._parse()
            path.mkdir(parents=True, exist_ok=True)
            write_manifest(manifest, str(path))
        return path

    def semantic_manifest(self) -> Path:
        """The ``semantic_manifest.json`` dbt writes when it parses the project (for this
        target)."""
        return self.artifacts() / "semantic_manifest.json"

    @property
    def adapter_type(self) -> str | None:
        """The adapter of the profile's target (``duckdb``, ``snowflake``, ...), from the manifest."""
        meta = getattr(self._parse(), "metadata", None)
        return getattr(meta, "adapter_type", None) or None

    @property
    def adapter_dialect(self) -> str:
        """The sqlglot dialect of the adapter (the workspace's ``[warehouse] dialect`` only
        for an adapter sqlglot does not know): the relation names dbt writes are in it."""
        from splice.providers.dbt_render import dialect_for_adapter

        return dialect_for_adapter(self.adapter_type, self.ctx.dialect)

    @property
    def dialect(self) -> str:
        """The sqlglot dialect of the SQL dbt compiles: the project's ``[[projects]] dialect``
        when set (Snowflake SQL run on DuckDB), else the adapter's."""
        own = self.ctx.options.get("dialect")
        return str(own) if own else self.adapter_dialect

    # -- graph ----------------------------------------------------------------------------------
    def load(self) -> list[Node]:
        m = self._parse()
        root_pkg = m.metadata.project_name if m.metadata else None
        names = node_names(m, root_pkg)
        p = self.ctx.project_name
        rel_of: dict[str, Any] = {}
        macros = self.macro_hash()
        nodes: list[Node] = []

        dialect = self.dialect
        names_in = self.adapter_dialect

        def rel(text: str | None) -> Any:
            # written by the adapter, named by the workspace's rules (relations must meet);
            # a name without a catalog (dbt-spark's) is in the warehouse's default catalog
            if not text or reads_files(text, names_in):
                return None
            return parse_relation(text, dialect=self.ctx.dialect, read=names_in,
                                  default_catalog=self.ctx.default_catalog)  # fmt: skip

        for uid, s in m.sources.items():
            r = rel(s.relation_name)
            rel_of[uid] = r
            nodes.append(
                Node(
                    id=f"{p}:{names[uid]}",
                    project=p,
                    name=names[uid],
                    kind="source",
                    tool="dbt",
                    reads=[r] if r else [],
                    tags=list(s.tags or []),
                    columns={c.name: c.data_type or "" for c in s.columns.values()},
                    language="none",
                    path=s.original_file_path,
                    description=s.description or None,
                    meta={
                        "unique_id": uid,
                        "loader": s.loader or None,
                        "freshness": bool(s.freshness),
                        # dbt-duckdb's external_location: the source reads files, not a relation
                        "external_location": s.relation_name
                        if r is None and s.relation_name
                        else None,
                        **column_descriptions(s),
                    },
                )
            )
        for uid, n in m.nodes.items():
            if uid not in names:
                continue
            kind = KINDS[n.resource_type.value]
            r = rel(getattr(n, "relation_name", None)) if kind != "test" else None
            rel_of[uid] = r
        for uid, n in m.nodes.items():
            if uid not in names:
                continue
            kind = KINDS[n.resource_type.value]
            # seeds carry a MacroDependsOn (macros only, no .nodes)
            deps = [d for d in (getattr(n.depends_on, "nodes", None) or []) if d in names]
            materialized = getattr(n.config, "materialized", None)
            lang = str(getattr(n, "language", "sql") or "sql")
            if kind == "seed":
                lang = "none"
            nodes.append(
                Node(
                    id=f"{p}:{names[uid]}",
                    project=p,
                    name=names[uid],
                    kind=kind,  # type: ignore[arg-type]
                    tool="dbt",
                    writes=rel_of.get(uid),
                    reads=[rel_of[d] for d in deps if rel_of.get(d) is not None],
                    depends_on=[f"{p}:{names[d]}" for d in deps],
                    tags=list(n.tags or []),
                    columns=seed_columns(n)
                    if kind == "seed"
                    else {c.name: c.data_type or "" for c in n.columns.values()},
                    dialect=dialect,
                    language=lang,
                    materialization=materialized,
                    path=n.original_file_path,
                    owner=owner_of(n),
                    description=n.description or None,
                    meta={
                        "unique_id": uid,
                        "package": n.package_name,
                        "checksum": n.checksum.checksum if getattr(n, "checksum", None) else None,
                        # what dbt says determines its compiled SQL, besides what it names
                        # (splice.lineage.service): its file and the project's macros
                        "render_hash": _render_hash(n, macros),
                        **version_meta(n),
                        **key_meta(n, names, p),
                        **time_spine_meta(n),
                        "adapter_type": self.adapter_type,  # its SQL is in this adapter's dialect
                        # ... unless the project names the dialect its SQL is written in
                        "dialect_from": "splice.toml"
                        if self.ctx.options.get("dialect")
                        else "adapter",
                        **column_descriptions(n),
                    },
                )
            )
        nodes.extend(extra_nodes(m, names, rel_of, p))
        for uid, e in m.exposures.items():
            deps = [d for d in e.depends_on.nodes if d in names]
            nodes.append(
                Node(
                    id=f"{p}:{names[uid]}",
                    project=p,
                    name=names[uid],
                    kind="dashboard",
                    tool="exposure",
                    depends_on=[f"{p}:{names[d]}" for d in deps],
                    reads=[rel_of[d] for d in deps if rel_of.get(d) is not None],
                    tags=list(e.tags or []),
                    language="none",
                    path=e.original_file_path,
                    owner=(e.owner.name or e.owner.email) if e.owner else None,
                    description=e.description or None,
                    meta={
                        "unique_id": uid,
                        "label": e.label or e.name,
                        "url": e.url,
                        "type": str(e.type.value if hasattr(e.type, "value") else e.type),
                    },
                )
            )
        self._names = names
        return nodes

    # -- rendering ------------------------------------------------------------------------------
    def macro_hash(self) -> str:
        m = self._parse()
        h = hashlib.sha256()
        for uid in sorted(m.macros):
            mac = m.macros[uid]
            h.update(uid.encode())
            h.update((mac.macro_sql or "").encode())
        return h.hexdigest()

    def render(self, nodes: list[Node]) -> dict[str, RenderedSQL]:
        """Compile the given models with dbt and return their compiled SQL."""
        m = self._parse()
        out: dict[str, RenderedSQL] = {}
        todo: list[Node] = []
        for n in nodes:
            if n.kind not in ("model", "snapshot"):
                continue
            if n.language != "sql":
                out[n.id] = RenderedSQL(
                    n.id, None, self.dialect, f"{n.language} model: no SQL to analyse"
                )
                continue
            todo.append(n)
        from splice.providers.dbt_plain import plain_render

        rest = []
        for n in todo:  # ref, source and config only: rendered from the manifest, without dbt
            sql = plain_render(m, m.nodes.get(str(n.meta["unique_id"])))
            if sql is None:
                rest.append(n)
            else:
                out[n.id] = RenderedSQL(n.id, sql, self.dialect)
        todo = rest
        if not todo:
            return out
        by_uid = {str(n.meta["unique_id"]): n for n in todo}
        args = self._args("compile") + ["--no-introspect"]
        if len(todo) < len([x for x in m.nodes.values() if x.resource_type.value == "model"]):
            # with the ephemeral models they read: dbt injects an ephemeral model's CTE only
            # into a model compiled together with it
            wanted = [*by_uid, *_ephemeral_ancestors(m, list(by_uid))]
            args += ["--select", *[selector_for(m.nodes[u]) for u in wanted]]
        else:
            args += ["--select", "resource_type:model", "resource_type:snapshot"]
        from splice.providers.dbt_render import incremental_branch

        try:  # see dbt_render: incrementals as an incremental run sees them
            with incremental_branch(m):
                res = self.invoke(args, label="compile")
        except ProjectError:  # that branch needs the warehouse: compile the first run's SQL
            with incremental_branch(m, incremental=False):
                res = self.invoke(args, label="compile")
        results = getattr(res.result, "results", None) or []
        for r in results:
            node = getattr(r, "node", None)
            if node is None or node.unique_id not in by_uid:
                continue
            sn = by_uid[node.unique_id]
            code = getattr(node, "compiled_code", None)
            if code:
                out[sn.id] = RenderedSQL(sn.id, code, self.dialect)
            else:
                msg = getattr(r, "message", None) or "dbt did not compile it"
                out[sn.id] = RenderedSQL(sn.id, None, self.dialect, f"not compiled: {msg}")
        for n in todo:
            out.setdefault(n.id, RenderedSQL(n.id, None, self.dialect, "dbt did not compile it"))
        return out

    def first_run_sql(self, nodes: list[Node]) -> dict[str, str | None]:
        """Each model's SQL as its first run (or a full refresh) compiles it: an incremental
        model's whole-table query (``is_incremental()`` false), for recomputing it."""
        from splice.providers.dbt_render import incremental_branch

        m = self._parse()
        by_uid = {str(n.meta["unique_id"]): n for n in nodes if n.kind == "model"}
        if not by_uid:
            return {}
        args = self._args("compile") + ["--no-introspect", "--select",
                                        *[selector_for(m.nodes[u]) for u in by_uid]]  # fmt: skip
        with incremental_branch(m, incremental=False):
            res = self.invoke(args, label="compile (first run)")
        out: dict[str, str | None] = {n.id: None for n in by_uid.values()}
        for r in getattr(res.result, "results", None) or []:
            node = getattr(r, "node", None)
            if node is not None and node.unique_id in by_uid:
                out[by_uid[node.unique_id].id] = getattr(node, "compiled_code", None)
        return out

    def close(self) -> None:
        release_warehouse()


def _model_paths(project: Path) -> list[str]:
    """The project's ``model-paths`` (dbt's default: ``models``), as dbt_project.yml says."""
    import yaml

    try:
        conf = yaml.safe_load((project / "dbt_project.yml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return ["models"]
    paths = conf.get("model-paths") if isinstance(conf, dict) else None
    return [str(p) for p in paths] if isinstance(paths, list) and paths else ["models"]


def _ephemeral_ancestors(m: Any, uids: list[str]) -> list[str]:
    """The ephemeral models ``uids`` read, directly or through other ephemeral models."""
    seen: set[str] = set()
    stack = list(uids)
    while stack:
        deps = getattr(m.nodes.get(stack.pop()), "depends_on", None)
        for dep in getattr(deps, "nodes", None) or []:
            node = m.nodes.get(dep)
            if node is None or dep in seen or dep in uids:
                continue
            if getattr(node.config, "materialized", None) == "ephemeral":
                seen.add(dep)
                stack.append(dep)
    return sorted(seen)


def _render_hash(node: Any, macros: str) -> str | None:
    """The node's file checksum with the digest of the project's macros (None without a
    checksum: then nothing says when its compiled SQL changes)."""
    checksum = node.checksum.checksum if getattr(node, "checksum", None) else None
    if not checksum:
        return None
    return hashlib.sha256(f"{checksum}|{macros}".encode()).hexdigest()


def _first_lines(text: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " ".join(lines[:n])
