"""SQLMesh projects, through sqlmesh.Context in process."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from splice.errors import ProjectError
from splice.graph.model import Node, Relation
from splice.graph.relations import parse_relation, relation_from_parts
from splice.providers.base import Capabilities, LoadContext, RenderedSQL
from splice.providers.locations import sqlmesh_config_file
from splice.support.capture import captured
from splice.support.faults_env import locked_error

CAPABILITIES = Capabilities(exact_selection=True, owns_state=True, renders_sql=True)


class SqlmeshProvider:
    format = "sqlmesh"
    capabilities = CAPABILITIES

    def __init__(self, ctx: LoadContext) -> None:
        self.ctx = ctx
        self._context: Any = None
        self._snapshots: dict[Any, Any] = {}  # SnapshotId -> Snapshot read from state
        self._local_ids: dict[str, str] | None = None
        self._ids: dict[str, str] | None = None  # fqn -> node id, set by load()
        self._local_audit_ids: dict[str, str] = {}
        # models the Context holds that another SQLMesh project owns (fqn -> its project name)
        self.foreign_models: dict[str, str] = {}
        self._stale = False

    @property
    def run_dir(self) -> Path:
        """Where SQLMesh runs for this project, so the relative paths of its config mean what
        they mean by hand: the project directory, or the workspace's when the projects of a
        multi-repo setup share one state only from there, as `sqlmesh -p repo_1 -p repo_2`
        run from that directory shares it (:func:`~splice.providers.locations.shared_run_dirs`)."""
        own = self.ctx.options.get("run_dir")
        return Path(str(own)) if own else self.ctx.project_path

    @property
    def multi_repo(self) -> bool:
        """True when the project has a `project:` name (SQLMesh's multi-repo setup): its Context
        then also reads the other projects' models from the shared state when it loads."""
        return self._context is not None and any(c.project for c in self._context.configs.values())

    def state_changed(self) -> None:
        """Another SQLMesh project planned into the state this one may share: in the multi-repo
        setup the loaded Context no longer knows the other projects' models as they are now (a
        plan would count them as removed), so it loads again before its next use."""
        if self.multi_repo:
            self._stale = True

    def warehouse(self) -> Any:
        """Where this project's warehouse is (a :class:`~splice.providers.locations.WarehouseLocation`),
        resolved as SQLMesh resolves it when run in the project directory; reads the config only
        (the loaded Context's, or SQLMesh's config loader), never the warehouse."""
        from splice.providers.locations import sqlmesh_location

        gateway = self.ctx.options.get("gateway")
        if self._context is not None:
            config = self._context.config
        else:
            from splice.providers.locations import load_sqlmesh_config

            with self._calling("config", "load its config"):
                config = load_sqlmesh_config(self.ctx.project_path)
        return sqlmesh_location(
            self.ctx.project_name,
            config,
            self.ctx.project_path,
            str(gateway) if gateway else None,
            cwd=self.run_dir,
        )

    def owned_elsewhere(self) -> dict[str, str]:
        """The models this project's Context holds that another SQLMesh project owns (read from
        the shared state; fqn -> that project), loading the Context if the graph came from
        Splice's cache."""
        if not self.foreign_models:
            self.foreign_models = _foreign(self.context)
        return dict(self.foreign_models)

    def foreign_downstream(self, fqns: list[str]) -> list[str]:
        """Models of other SQLMesh projects (multi-repo, read from the shared state) downstream
        of ``fqns``: SQLMesh's plan of this project re-evaluates them after a breaking change,
        as it does when run by hand, so a plan selecting ``fqns`` must select them too (left
        out, SQLMesh points their views at tables it never built)."""
        if not self.foreign_models:
            return []
        dag = self.context.dag
        out: set[str] = set()
        for f in fqns:
            if f in dag:
                out.update(d for d in dag.downstream(f) if d in self.foreign_models)
        return sorted(out)

    def _reload(self) -> None:
        self._stale = False
        with self._calling("reload", "load"):
            self._context.load()
        self._local_ids = None
        self.foreign_models = _foreign(self._context)

    @property
    def context(self) -> Any:
        if self._context is not None and self._stale:
            self._reload()
        if self._context is None:
            self._probe_spark()
            with self._calling("load", "load"):
                from splice.support.sqlmesh_import import import_sqlmesh

                Context = import_sqlmesh().Context
                kwargs: dict[str, Any] = {"paths": str(self.ctx.project_path)}
                gw = self.ctx.options.get("gateway")
                if gw:
                    kwargs["gateway"] = gw
                self._context = Context(**kwargs)
                # a state database of its own (not the warehouse: opening it early holds no
                # warehouse lock) is opened here, so SQLMesh's warnings about it are captured
                if self._context.config.get_state_connection(self._context.gateway) is not None:
                    _ = self._context.state_reader
        return self._context

    def _probe_spark(self) -> None:
        """SQLMesh connects its gateway while loading (its default catalog): a Spark Connect
        server that does not answer is said at once, not after pyspark's minutes of retries."""
        from splice.errors import SpliceError
        from splice.warehouse.spark.connect import probe_project_endpoint

        try:
            loc = self.warehouse()
        except SpliceError:
            return  # the config does not load: the Context's load below says why
        probe_project_endpoint(loc, self.ctx.project_name)

    @contextlib.contextmanager
    def _calling(self, label: str, what: str) -> Iterator[None]:
        """SQLMesh called in the project's directory (its relative paths mean what they mean by
        hand), its output captured, anything it raises turned into a ProjectError (``what``
        failed)."""
        os.environ.setdefault("SQLMESH__DISABLE_ANONYMIZED_ANALYTICS", "true")
        with captured(
            self.ctx.log_path,
            f"sqlmesh {label} ({self.ctx.project_name})",
            cwd=self.run_dir,
        ):
            try:
                yield
            except Exception as e:  # noqa: BLE001 - turned into a ProjectError
                raise self._error(e, what) from e

    def _error(self, e: BaseException, what: str) -> Exception:
        lock = locked_error(e, f"SQLMesh project {self.ctx.project_name!r}")
        if lock:
            return lock
        text = " ".join(ln.strip() for ln in str(e).strip().splitlines()[:3] if ln.strip())
        where = str(self.ctx.project_path)
        fix = "fix the config or model file SQLMesh names"
        config_file = (
            sqlmesh_config_file(self.ctx.project_path) if _raised_by_config_loader(e) else None
        )
        if config_file is not None:  # SQLMesh's message names the key but not the file
            where = str(config_file)
            fix = f"correct {config_file.name}"
        return ProjectError(
            f"SQLMesh project {self.ctx.project_name!r} ({where}) failed to {what}: "
            f"{type(e).__name__}: {text}",
            fix=f"{fix}; `sqlmesh info` in that directory shows the same error; rerun with -v for SQLMesh's output",
        )

    def naming(self, environment: str | None = None) -> Any:
        from sqlmesh.core.environment import EnvironmentNamingInfo

        return EnvironmentNamingInfo(
            name=environment or self.ctx.environment,
            suffix_target=self.context.config.environment_suffix_target,
        )

    def view_relation(self, model: Any, environment: str | None = None) -> Relation:
        """The relation a model is read through in this environment (the virtual-layer view)."""
        from sqlglot import exp
        from sqlmesh.core.snapshot.definition import QualifiedViewName

        t = exp.to_table(model.fully_qualified_table or model.fqn)
        qvn = QualifiedViewName(catalog=t.catalog or None, schema_name=t.db or None, table=t.name)
        tbl = qvn.table_for_environment(self.naming(environment), dialect=model.dialect)
        return relation_from_parts(
            tbl.catalog or None, tbl.db or None, tbl.name, dialect=self.ctx.dialect
        )

    def load(self) -> list[Node]:
        ctx = self.context
        p = self.ctx.project_name
        default_catalog = (ctx.default_catalog or "").lower() or None
        # In SQLMesh's multi-repo setup (several projects, each with its own `project:` name,
        # sharing one state) the Context also holds the other projects' models, read back from
        # the shared state: they are not this project's nodes. What this project reads of them
        # stays a read of their relation, joined to their own project by a binding.
        all_models = ctx.models
        own_projects = {c.project for c in ctx.configs.values()}
        models = {f: m for f, m in all_models.items() if (m.project or "") in own_projects}
        self.foreign_models = _foreign(ctx)
        ids: dict[str, str] = {}
        for fqn, m in models.items():
            ids[fqn] = f"{p}:{short_name(m, default_catalog)}"
        nodes: list[Node] = []
        for fqn, m in models.items():
            kind_name = m.kind.name.value if hasattr(m.kind.name, "value") else str(m.kind.name)
            external = kind_name.upper() == "EXTERNAL"
            rel_fqn = parse_relation(fqn, dialect=self.ctx.dialect)
            deps = sorted(d for d in m.depends_on if d in ids)
            ext_reads = sorted(d for d in m.depends_on if d not in ids)
            columns = {
                c: (t.sql(dialect=m.dialect) if t is not None else "")
                for c, t in (m.columns_to_types or {}).items()
            }
            language = "python" if type(m).__name__ == "PythonModel" else "sql"
            if kind_name.upper() in ("SEED",):
                language = "none"
            time_col = None
            tc = getattr(m, "time_column", None)
            if tc is not None:
                col = tc.column
                time_col = col.name if hasattr(col, "name") else str(col)
            reads: list[Relation] = [
                self.view_relation(models[d])
                if not is_external(models[d])
                else parse_relation(d, dialect=self.ctx.dialect)
                for d in deps
            ] + [
                self.view_relation(all_models[d])
                if d in all_models and not is_external(all_models[d])
                else parse_relation(d, dialect=self.ctx.dialect)
                for d in ext_reads
            ]
            name = ids[fqn].split(":", 1)[1]
            path = (
                str(Path(m._path).relative_to(self.ctx.project_path))
                if m._path and str(m._path).startswith(str(self.ctx.project_path))
                else (str(m._path) if m._path else None)
            )
            node = Node(
                id=ids[fqn],
                project=p,
                name=name,
                kind="external"
                if external
                else ("seed" if kind_name.upper() == "SEED" else "model"),
                tool="sqlmesh",
                writes=None if external else self.view_relation(m),
                reads=[rel_fqn] if external else reads,
                depends_on=[ids[d] for d in deps],
                tags=list(m.tags or []),
                columns=columns,
                dialect=m.dialect or self.ctx.dialect,
                language="none" if external else language,
                materialization=kind_name,
                time_column=time_col,
                path=path,
                owner=m.owner,
                description=m.description,
                meta={
                    "fqn": fqn,
                    # SQLMesh's `project:` name (multi-repo), None outside that setup
                    "sqlmesh_project": m.project or None,
                    "cron": getattr(m, "cron", None),
                    # the model's declared grain (the columns that identify a row)
                    "grain": [
                        g.name.lower()
                        for g in getattr(m, "grains", None) or []
                        if getattr(g, "name", "")
                    ]
                    or None,
                    # what SQLMesh says determines its rendered SQL (splice.lineage.service)
                    "render_hash": _render_hash(m, all_models),
                    "prod_relation": (
                        self.view_relation(m, "prod").key
                        if not external and self.ctx.environment.lower() != "prod"
                        else None
                    ),
                },
            )
            added = _tool_columns(m)
            if added:
                node.meta["tool_columns"] = added
            described = {
                c: d for c, d in (getattr(m, "column_descriptions", None) or {}).items() if d
            }
            if described:
                node.meta["column_descriptions"] = described
            nodes.append(node)
            seen_audits: dict[str, int] = {}
            for audit_name, _args in m.audits:
                # the same audit may be applied twice (accepted_range on two columns): number
                # the repeats so that no audit replaces another in the graph
                seen_audits[audit_name] = seen_audits.get(audit_name, 0) + 1
                label = (
                    audit_name
                    if seen_audits[audit_name] == 1
                    else f"{audit_name}_{seen_audits[audit_name]}"
                )
                aid = f"{p}:audit:{name}.{label}"
                nodes.append(
                    Node(
                        id=aid,
                        project=p,
                        name=f"audit:{name}.{label}",
                        kind="audit",
                        tool="sqlmesh",
                        depends_on=[ids[fqn]],
                        language="none",
                        meta={
                            "audit": audit_name,
                            "model": ids[fqn],
                            "blocking": True,
                            "args": {
                                k: (v.sql(dialect=m.dialect) if hasattr(v, "sql") else str(v))
                                for k, v in _args.items()
                            },
                        },
                    )
                )
        nodes += self._standalone_audit_nodes(ids)
        nodes += self._metric_nodes(ids, models)
        self._ids = ids
        return nodes

    def _metric_nodes(self, ids: dict[str, str], models: dict[str, Any]) -> list[Node]:
        """The project's ``METRIC`` definitions (``metrics/``), as dbt's semantic-layer metrics
        are listed: a ``metric`` node depending on the models its measures and dimensions
        read; never built."""
        p = self.ctx.project_name
        by_name = {str(m.name).lower(): fqn for fqn, m in models.items()}
        out: list[Node] = []
        for name, metric in sorted((getattr(self.context, "metrics", None) or {}).items()):
            tables: set[str] = set()
            for measure, dims in metric.aggs.values():
                tables.add(str(measure).lower())
                tables.update(str(d).lower() for d in dims)
            deps = sorted(ids[by_name[t]] for t in tables if t in by_name)
            out.append(Node(
                id=f"{p}:metric:{name}", project=p, name=f"metric:{name}", kind="metric",
                tool="sqlmesh", depends_on=deps, language="none", owner=metric.owner,
                description=metric.description,
                meta={"expression": metric.expanded.sql(dialect=metric.dialect or None),
                      "measures": sorted(str(m).lower() for m, _ in metric.aggs.values())},
            ))  # fmt: skip
        return out

    def _standalone_audits(self) -> dict[str, Any]:
        """SQLMesh's standalone audits (``audits/*.sql`` with ``standalone true``) by name."""
        return dict(getattr(self.context, "standalone_audits", None) or {})

    def _standalone_audit_nodes(self, ids: dict[str, str]) -> list[Node]:
        """One ``audit`` node per standalone audit (``project:audit:NAME``), after the models it
        queries. SQLMesh runs it as its own snapshot in every plan and run that selects it;
        SQLMesh refuses a blocking one, so its failure is a warning."""
        p = self.ctx.project_name
        out: list[Node] = []
        for name, audit in sorted(self._standalone_audits().items()):
            path = getattr(audit, "_path", None)
            out.append(
                Node(
                    id=f"{p}:audit:{name}",
                    project=p,
                    name=f"audit:{name}",
                    kind="audit",
                    tool="sqlmesh",
                    depends_on=sorted(ids[d] for d in audit.depends_on if d in ids),
                    language="none",
                    dialect=getattr(audit, "dialect", None) or self.ctx.dialect,
                    path=_relative(path, self.ctx.project_path),
                    owner=getattr(audit, "owner", None),
                    description=getattr(audit, "description", None),
                    tags=list(getattr(audit, "tags", None) or []),
                    meta={
                        "audit": name,
                        "standalone": True,
                        "snapshot_name": name,  # its snapshot's name in SQLMesh
                        "blocking": bool(getattr(audit, "blocking", False)),
                    },
                )
            )
        return out

    def render(self, nodes: list[Node]) -> dict[str, RenderedSQL]:
        ctx = self.context
        out: dict[str, RenderedSQL] = {}
        with captured(
            self.ctx.log_path,
            f"sqlmesh render ({self.ctx.project_name})",
            cwd=self.run_dir,
        ):
            for n in nodes:
                if n.kind != "model":
                    continue
                fqn = str(n.meta.get("fqn"))
                if n.language == "python":
                    out[n.id] = RenderedSQL(
                        n.id, None, self.ctx.dialect, "Python model: no SQL to analyse"
                    )
                    continue
                try:
                    model = ctx.models[fqn]
                    # Render against model names (the virtual layer), not the snapshots'
                    # physical tables: lineage joins on the relations other projects read.
                    # Without arguments SQLMesh answers from the query it optimised while
                    # loading (5 ms a model, not 28): the engine adapter only for a model
                    # whose macros call it at render time.
                    try:
                        q = model.render_query_or_raise()
                    except Exception:  # noqa: BLE001 - retried with the adapter just below
                        q = model.render_query_or_raise(engine_adapter=ctx.engine_adapter)
                    out[n.id] = RenderedSQL(
                        n.id,
                        q.sql(dialect=model.dialect or self.ctx.dialect),
                        model.dialect or self.ctx.dialect,
                    )
                except Exception as e:  # noqa: BLE001 - one bad model is opaque, never a crash
                    out[n.id] = RenderedSQL(
                        n.id,
                        None,
                        self.ctx.dialect,
                        f"SQLMesh could not render it: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                    )
        return out

    def intervals(self) -> dict[str, list[tuple[int, int]]]:
        """Intervals in SQLMesh's state for this environment, per node id ([start_ms, end_ms))."""
        with captured(
            self.ctx.log_path, f"sqlmesh state ({self.ctx.project_name})", cwd=self.run_dir
        ):
            env, snaps = self.environment_snapshots(self.ctx.environment)
            if env is None:
                return {}
        if self._ids is None:
            self.load()  # the graph came from the cache: name the models as load() does
        ids = self._ids or {}
        out: dict[str, list[tuple[int, int]]] = {}
        for s in snaps.values():
            nid = ids.get(s.name)
            if nid:
                out[nid] = [(int(a), int(b)) for a, b in s.intervals]
        return out

    def environment_snapshots(self, environment: str) -> tuple[Any, dict[Any, Any]]:
        """``environment`` from SQLMesh's state (None when it was never planned) and its
        snapshots by id, with the intervals the state holds now.

        A snapshot's definition never changes under its id, only its intervals do: snapshots read
        before are kept and only their intervals are read again (SQLMesh's own
        ``refresh_snapshot_intervals``), which on 100 models takes a few hundredths of a second
        where reading every snapshot again takes about one.
        """
        reader = self.context.state_reader
        env = reader.get_environment(environment)
        if env is None:
            return None, {}
        ids = [s.snapshot_id for s in env.snapshots]
        known = [self._snapshots[i] for i in ids if i in self._snapshots]
        missing = [i for i in ids if i not in self._snapshots]
        if known:
            reader.refresh_snapshot_intervals(known)
        fetched = reader.get_snapshots(missing) if missing else {}
        self._snapshots.update(fetched)
        return env, {i: self._snapshots[i] for i in ids if i in self._snapshots}

    def remember_snapshots(self, snapshots: Any) -> None:
        """Keep the snapshots a plan applied in this process (the next
        :meth:`environment_snapshots` then reads only their intervals)."""
        for s in snapshots:
            self._snapshots[s.snapshot_id] = s

    def local_snapshot_ids(self) -> dict[str, str]:
        """{model fqn: snapshot identifier} of the project's models as loaded (external models and
        standalone audits left out).

        The identifiers ``Context.snapshots`` gives, computed from the local definitions alone:
        that property also reads every stored snapshot from SQLMesh's state (about a second on
        100 models), which only matters for snapshots SQLMesh restamps (``unrestorable``; the
        caller checks those in the state it read).
        """
        if self._local_ids is None:
            ctx = self.context
            to_snapshots = getattr(ctx, "_nodes_to_snapshots", None)
            if to_snapshots is None:  # another SQLMesh: its public (slower) property
                snaps = ctx.snapshots
            else:
                snaps = to_snapshots({**ctx._models, **ctx._standalone_audits})
            own = {c.project for c in ctx.configs.values()}  # multi-repo: not the others'
            self._local_ids = {
                fqn: str(s.snapshot_id.identifier)
                for fqn, s in snaps.items()
                if s.model_or_none is not None
                and not is_external(s.model_or_none)
                and (s.model_or_none.project or "") in own
            }
            self._local_audit_ids = {
                name: str(s.snapshot_id.identifier)
                for name, s in snaps.items()
                if getattr(s, "is_audit", False)
            }
        return self._local_ids

    def local_audit_ids(self) -> dict[str, str]:
        """{standalone audit name: snapshot identifier} as loaded (see :meth:`local_snapshot_ids`)."""
        self.local_snapshot_ids()
        return dict(self._local_audit_ids)

    def state_file(self) -> str | None:
        """The DuckDB file of the project's own ``state_connection`` (absolute; a relative
        path means what it means from :attr:`run_dir`), or None: no state connection of its
        own, or one that is not a DuckDB file. The plan memo reads SQLMesh's state there
        without loading SQLMesh (:mod:`splice.providers.sqlmesh_state`)."""
        ctx = self.context
        cfg = ctx.config.get_state_connection(ctx.gateway)
        database = getattr(cfg, "database", None)
        if cfg is None or getattr(cfg, "type_", None) != "duckdb" or not database:
            return None
        if str(database) == ":memory:" or str(database).startswith(("md:", "motherduck:")):
            return None
        path = Path(str(database))
        return str(path if path.is_absolute() else (self.run_dir / path).resolve())

    def prewarm(self) -> None:
        """SQLMesh loads in this process only (its own loaders fork as they need)."""
        return None

    def release(self) -> None:
        """Close SQLMesh's connections (the warehouse file is free again) but keep the loaded
        Context: its connection pools reopen on the next use, so the next segment or plan in
        this process does not load the project again."""
        if self._context is not None:
            self._context.close()

    def close(self) -> None:
        if self._context is not None:
            try:
                self._context.close()
            finally:
                self._context = None
                self._snapshots.clear()
                self._local_ids = None
                self._local_audit_ids = {}


def _tool_columns(model: Any) -> dict[str, dict[str, Any]]:
    """Columns SQLMesh adds to a model's table beyond its query (``model.managed_columns``: an
    SCD type 2 model's ``valid_from`` / ``valid_to``, named by the kind's ``valid_from_name`` /
    ``valid_to_name``), each with the query columns SQLMesh derives it from and why.

    They are real columns of the table (``columns_to_types`` lists them): lineage knows them.
    """
    managed = dict(getattr(model, "managed_columns", None) or {})
    if not managed:
        return {}
    kind = model.kind
    kind_name = str(getattr(kind.name, "value", kind.name))
    updated = getattr(kind, "updated_at_name", None)
    updated_name = getattr(updated, "name", None) if updated is not None else None
    if updated_name:
        source = [updated_name]
        why = f"SQLMesh adds it to this {kind_name} model from {updated_name!r}"
    else:
        source = []
        why = (
            f"SQLMesh adds it to this {kind_name} model and sets it to the run's execution time "
            "when a tracked column changes: no query column flows into it"
        )
    return {str(c): {"from": source, "why": why} for c in managed}


def _relative(path: Any, project: Path) -> str | None:
    if not path:
        return None
    try:
        return str(Path(path).relative_to(project))
    except ValueError:
        return str(path)


def _foreign(ctx: Any) -> dict[str, str]:
    """{fqn: owning project} of the models a Context holds for other SQLMesh projects."""
    own = {c.project for c in ctx.configs.values()}
    return {f: (m.project or "") for f, m in ctx.models.items() if (m.project or "") not in own}


def is_external(model: Any) -> bool:
    """True for a SQLMesh EXTERNAL model (a table SQLMesh reads and never builds)."""
    name = model.kind.name.value if hasattr(model.kind.name, "value") else str(model.kind.name)
    return name.upper() == "EXTERNAL"


def _raised_by_config_loader(e: BaseException) -> bool:
    """True when ``e`` came out of SQLMesh's config loading (config.yaml / config.py)."""
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith(
            "sqlmesh/core/config/loader.py"
        ):
            return True
        tb = tb.tb_next
    return False


def short_name(model: Any, default_catalog: str | None) -> str:
    """``fx.daily_rates`` for a model in the default catalog, ``cat.fx.daily_rates`` otherwise."""
    from sqlglot import exp

    t = exp.to_table(model.fqn)
    parts = [t.db, t.name]
    if t.catalog and (default_catalog is None or t.catalog.lower() != default_catalog):
        parts.insert(0, t.catalog)
    return ".".join(x for x in parts if x)


def _render_hash(model: Any, models: dict[str, Any]) -> str:
    """What determines ``model``'s rendered query in SQLMesh's own terms: its data and metadata
    hashes and the data hash of each model it reads (the columns they give it). Kept in the
    node, so that a lineage of an unchanged project asks nothing of SQLMesh."""
    h = hashlib.sha256(f"{model.data_hash}|{model.metadata_hash}".encode())
    for d in sorted(model.depends_on):
        dm = models.get(d)
        h.update(f"|{d}:{dm.data_hash if dm is not None else ''}".encode())
    return h.hexdigest()
