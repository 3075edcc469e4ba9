"""The library facade: everything the CLI and the MCP tools do goes through :class:`Workspace`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splice.config.workspace import CONFIG_FILE, WorkspaceConfig, load_config
from splice.errors import ConfigError
from splice.graph.model import Graph, Node
from splice.graph.relations import normalise_identifier
from splice.providers.base import LoadContext
from splice.providers.dashboards import dashboard_nodes
from splice.providers.ingestion import ingestion_nodes
from splice.state.pool import StatePool
from splice.state.signing import Signer
from splice.state.store import StateStore
from splice.workspace.bindings import join

#: the content cache's kind for a lone project's warehouse file (one entry, with its graph key)
LONE_WAREHOUSE_KIND = "lone_warehouse"


@dataclass
class Timings:
    phases: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.phases[name] = self.phases.get(name, 0.0) + seconds


class Workspace:
    """A Splice workspace: its config, its projects' providers, the joined graph and the state.

    Open it with :meth:`open`; close it (or use ``with``) so the tools release the warehouse.
    """

    def __init__(
        self,
        root: Path,
        config: WorkspaceConfig,
        target: str | None = None,
        *,
        new_state: bool = False,
        use_cache: bool | None = None,
    ) -> None:
        self.root = root
        self.new_state = new_state
        self.config = config
        self.has_config = (root / CONFIG_FILE).exists()
        # a lone dbt project (no splice.toml) runs the profile's own default target, and Splice
        # names its target after it: what plan, run, runs and --json print is what dbt ran
        self.target = target or self._lone_dbt_target() or config.workspace.default_target
        if config.targets and self.target not in config.targets:
            raise ConfigError(
                f"{root / CONFIG_FILE}: target {self.target!r} is not defined.",
                fix=f"use --target with one of: {', '.join(sorted(config.targets))}",
            )
        own = config.targets.get(self.target)
        if own is not None and own.warehouse is not None:  # a target on a warehouse of its own
            config = config.model_copy(update={"warehouse": own.warehouse})
            self.config = config
        self.dialect = config.warehouse.dialect
        self.default_catalog = (
            normalise_identifier(self._catalog_name(), self.dialect) if self.has_config else None
        )
        self._providers: dict[str, Any] = {}
        self._run_dirs: dict[str, Path] | None = None
        self._graph: Graph | None = None
        self._lone_warehouse: Path | None = None
        self._state: StateStore | None = None
        self._signer: Signer | None = None
        #: where a long-lived server keeps state connections between requests (splice.api.served)
        self.state_pool: StatePool | None = None
        self.timings = Timings()
        #: told what long work is doing now ("loading dbt project finance (1/2)", "analysing
        #: column lineage: 800/2,000 models"): the CLI's spinner shows it (cli.render.working)
        self.progress: Callable[[str], None] | None = None
        # the graph cache (splice.workspace.graph_cache): off with --no-cache or SPLICE_NO_CACHE=1
        self.use_cache = (
            use_cache
            if use_cache is not None
            else os.environ.get("SPLICE_NO_CACHE", "") in ("", "0")
        )
        self.graph_key: str | None = None
        # each project's own key, taken with graph_key (graph_cache.project_nodes)
        self.project_keys: dict[str, str] | None = None
        # project -> ids of the nodes load_graph() had its tool load (not from the cache)
        self.loaded_projects: dict[str, list[str]] = {}
        self._warehouse_up = False  # ensure_warehouse() ran
        self.graph_cached = False  # True when graph() came from the cache
        self._graph_stored = False  # True when the graph loaded was kept in the cache
        self.notices: list[str] = []  # what opening found that a person should read (shown once)
        #: repair applies recovered as the session started, for the next run's report to say
        #: (splice.api.recovery)
        self.recovered: list[str] = []

    def _catalog_name(self) -> str:
        """The catalog relations live in (the engine's ``connect.catalog``): DuckDB names it
        after the file's stem, PostgreSQL is the database connected to."""
        from splice.warehouse.engines import engine_module

        wh = self.config.warehouse
        return str(engine_module(wh.type, "connect").catalog(wh))

    @classmethod
    def open(
        cls,
        root: Path | str = ".",
        target: str | None = None,
        *,
        new_state: bool = False,
        use_cache: bool | None = None,
    ) -> Workspace:
        """``new_state``: start a new, empty state even though the witness says this workspace
        had one (the history is then gone; see :mod:`splice.state.witness`)."""
        root = Path(root).resolve()
        if not root.is_dir():
            raise ConfigError(
                f"workspace {root} does not exist.",
                fix="pass --workspace DIR of an existing directory",
            )
        config = load_config(root)
        return cls(root, config, target, new_state=new_state, use_cache=use_cache)

    def ensure_warehouse(self) -> None:
        """Start the workspace's own warehouse server (``[warehouse] local``: a PostgreSQL data
        directory or a Spark Connect server in the workspace) if it is not running, once per
        Workspace. Called before the first warehouse connection, the first tool loaded, a run,
        and a state kept on that server: a command that reads only Splice's state
        (``splice incidents``) starts nothing."""
        if self._warehouse_up or not self.config.warehouse.local:
            return
        from splice.warehouse.connect import ensure_local_server

        ensure_local_server(self.root, self.config.warehouse)
        self._warehouse_up = True

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- paths -------------------------------------------------------------------------------
    @property
    def splice_dir(self) -> Path:
        return self.root / ".splice"

    @property
    def log_path(self) -> Path:
        return self.splice_dir / "logs" / "tools.log"

    @property
    def warehouse_path(self) -> Path:
        """splice.toml's ``[warehouse] path``; for a lone project with no splice.toml, the file
        its tool writes (as the tool resolves it in the project directory)."""
        if self.has_config or len(self.config.projects) != 1:
            return (self.root / self.config.warehouse.path).resolve()
        if self._lone_warehouse is None:
            self._lone_warehouse = self._lone_warehouse_path()
        return self._lone_warehouse

    def _lone_warehouse_path(self) -> Path:
        """The lone project's warehouse file, asked of its tool once per graph key (kept in
        the content cache beside the graph, so a warm read loads no tool for it)."""
        from splice.errors import SpliceError

        cached = self.caching and self.state_exists
        key = self.inputs_key() if cached else ""
        if cached:
            hit = self.state.cache_get_many(LONE_WAREHOUSE_KIND, ["lone"]).get("lone")
            if isinstance(hit, dict) and hit.get("key") == key:
                return Path(str(hit["path"]))
        try:
            loc = self.provider(self.config.projects[0].name).warehouse()
        except SpliceError:  # the tool reports its broken config when it loads
            return (self.root / self.config.warehouse.path).resolve()
        path = (
            Path(loc.path)
            if loc is not None and loc.kind == "file" and loc.path
            else (self.root / self.config.warehouse.path).resolve()
        )
        if cached:
            self._keep_lone_warehouse(key, path)
        return path

    def _keep_lone_warehouse(self, key: str, path: Path) -> None:
        self.state.cache_put_many(LONE_WAREHOUSE_KIND, {"lone": {"key": key, "path": str(path)}})

    # -- providers -----------------------------------------------------------------------------
    def environment(self, project: str) -> str:
        return self.config.environment_for(project, self.target)

    def provider(self, project: str) -> Any:
        if project in self._providers:
            return self._providers[project]
        spec = next((p for p in self.config.projects if p.name == project), None)
        if spec is None:
            raise ConfigError(f"no project named {project!r} in {self.root / CONFIG_FILE}.")
        self.ensure_warehouse()  # the tools connect to it as they load
        if self.config.warehouse.type == "spark":  # ... inside the run's session, if one runs
            from splice.warehouse.spark.connect import open_run_session

            open_run_session()
        ctx = self._load_context(spec)
        if spec.format == "dbt":
            from splice.providers.dbt import DbtProvider

            prov: Any = DbtProvider(ctx)
        else:
            from splice.providers.sqlmesh import SqlmeshProvider

            prov = SqlmeshProvider(ctx)
        self._providers[project] = prov
        return prov

    def _load_context(self, spec: Any) -> LoadContext:
        return LoadContext(
            root=self.root,
            project_name=spec.name,
            project_path=(self.root / spec.path).resolve(),
            target=self.target,
            environment=self.environment(spec.name),
            dialect=self.dialect,
            default_catalog=self.default_catalog,
            log_path=self.log_path,
            work_dir=self.splice_dir / spec.format / spec.name,
            options={
                "profiles_dir": (self.root / spec.profiles_dir).resolve()
                if spec.profiles_dir
                else None,
                "gateway": self._gateway(spec),
                "dialect": spec.dialect,  # dbt: the SQL's own dialect, if not the adapter's
                # SQLMesh: where it runs (the project directory unless the multi-repo setup
                # shares its state only from the workspace's, as `sqlmesh -p a -p b` does)
                "run_dir": self._sqlmesh_run_dirs().get(spec.name)
                if spec.format == "sqlmesh"
                else None,
                "environments_key": self._environments_key(spec.name),
            },
        )

    def _sqlmesh_run_dirs(self) -> dict[str, Path]:
        """SQLMesh projects that run from the workspace directory, not their own (see
        :func:`splice.providers.locations.shared_run_dirs`); read once per Workspace."""
        if self._run_dirs is None:
            specs = [p for p in self.config.projects if p.format == "sqlmesh"]
            self._run_dirs = {}
            if len(specs) > 1:
                from splice.providers.locations import shared_run_dirs

                self._run_dirs = shared_run_dirs(
                    self.root,
                    [(s.name, (self.root / s.path).resolve(), self._gateway(s)) for s in specs],
                    self.log_path,
                )
        return self._run_dirs

    def _gateway(self, spec: Any) -> str | None:
        """The SQLMesh gateway of ``spec`` in this target: ``[targets.T] gateways``, else the
        project's own ``gateway``."""
        t = self.config.targets.get(self.target)
        return t.gateways.get(spec.name, spec.gateway) if t is not None else spec.gateway

    def _environments_key(self, project: str) -> str | None:
        """Where splice.toml maps this target to ``project``'s environment (for errors):
        ``FILE: targets.prod.environments.finance`` or ``FILE: projects[1].environments``."""
        if not self.has_config:
            return None
        file = self.root / CONFIG_FILE
        t = self.config.targets.get(self.target)
        if t is not None and project in t.environments:
            return f"{file}: targets.{self.target}.environments.{project}"
        i = next(i for i, p in enumerate(self.config.projects) if p.name == project)
        return f"{file}: projects[{i}].environments (the [[projects]] entry name = {project!r})"

    def _lone_dbt_target(self) -> str | None:
        projects = self.config.projects
        if self.has_config or self.config.targets or len(projects) != 1:
            return None
        if projects[0].format != "dbt":
            return None
        return _dbt_default_target(self.root)

    def check_targets(self) -> None:
        """Raise when a dbt project's profile has no output for this target (cheap: reads
        profiles.yml, loads no tool): commands that write state call it first."""
        from splice.providers.dbt import check_target

        for spec in self.config.projects:
            if spec.format == "dbt":
                check_target(self._load_context(spec))

    def loaded_providers(self, fmt: str, *, but: str | None = None) -> list[Any]:
        """The providers of format ``fmt`` already created (other than project ``but``)."""
        return [p for name, p in self._providers.items() if p.format == fmt and name != but]

    # -- graph -------------------------------------------------------------------------------
    def graph(self) -> Graph:
        """The joined graph: from the graph cache when nothing it depends on changed
        (:mod:`splice.workspace.graph_cache`; no tool is loaded), else loaded from every project."""
        if self._graph is not None:
            return self._graph
        if self.caching:
            from splice.workspace import graph_cache

            key = self.inputs_key()
            t0 = time.perf_counter()
            hit = graph_cache.lookup(self, key) if self.state_exists else None
            if hit is not None:
                self.timings.add("cache_read", time.perf_counter() - t0)
                self._graph = hit
                self.graph_cached = True
                return hit
        if self.use_cache:
            self.inputs_key()  # taken before the projects are read: an edit meanwhile is seen
        graph = self.load_graph()
        if self.caching:
            from splice.workspace import graph_cache

            self._graph_stored = graph_cache.store(self, self.inputs_key(), graph)
        return graph

    def cached_graph(self) -> Graph | None:
        """The joined graph when it is loaded or in the graph cache, else None: never loads a
        tool (a read that must not touch the warehouse while a run holds it)."""
        if self._graph is not None:
            return self._graph
        if not (self.caching and self.state_exists):
            return None
        from splice.workspace import graph_cache

        hit = graph_cache.lookup(self, self.inputs_key())
        if hit is not None:
            self._graph = hit
            self.graph_cached = True
        return hit

    def open_state_for_caches(self) -> None:
        """Open (or start) the state once the graph loaded, for a command that keeps its
        column lineage there anyway, and keep the graph in it: in a lone project without
        splice.toml the graph, the warehouse's location and the whole lineage are then cached
        by this first command too, so the next one loads no tool. Nothing with ``--no-cache``."""
        if not self.use_cache:
            return
        if self._state is None:
            _ = self.state
        if (
            self._graph is not None
            and not self.graph_cached
            and not self._graph_stored
            and self.graph_key is not None
        ):
            from splice.workspace import graph_cache

            self._graph_stored = graph_cache.store(self, self.graph_key, self._graph)
            if self._lone_warehouse is not None:  # asked of the tool before the state was open
                self._keep_lone_warehouse(self.graph_key, self._lone_warehouse)

    @property
    def caching(self) -> bool:
        """Whether the graph cache is used. It lives in Splice's state: read only where a
        state exists, and a state is started for it only in a workspace with a splice.toml
        (opening a lone dbt or SQLMesh project, or failing to load one, leaves no state)."""
        return self.use_cache and (self._state is not None or self.state_exists or self.has_config)

    def inputs_key(self) -> str:
        """The graph key (:func:`splice.workspace.graph_cache.graph_key`), taken once per Workspace:
        a Workspace keeps the graph it loaded first, so it keeps that graph's key too."""
        if self.graph_key is None:
            from splice.workspace import graph_cache

            t0 = time.perf_counter()
            self.graph_key, summary = graph_cache.graph_inputs(self)
            self.project_keys = summary["projects"]
            self.timings.add("cache_key", time.perf_counter() - t0)
        return self.graph_key

    def report(self, message: str) -> None:
        """Say what long work is doing now to whoever listens (:attr:`progress`)."""
        if self.progress is not None:
            self.progress(message)

    def load_graph(self) -> Graph:
        """The joined graph, each project's nodes loaded through its tool, or kept from the
        last load when nothing that project depends on changed
        (:func:`splice.workspace.graph_cache.project_nodes`)."""
        loaded: dict[str, list[Node]] = {}
        if self.caching and self.state_exists and self.inputs_key():
            from splice.workspace import graph_cache

            t0 = time.perf_counter()
            loaded = graph_cache.project_nodes(self)
            if loaded:
                self.timings.add("cache_read", time.perf_counter() - t0)
        todo = [spec for spec in self.config.projects if spec.name not in loaded]
        self.loaded_projects = {}
        children: dict[str, Any] = {}
        try:
            if len(todo) > 1:  # one tool parses in a child while others load
                for spec in todo:
                    child = self.provider(spec.name).prewarm()
                    if child is not None:
                        children[spec.name] = child
            specs = sorted(todo, key=lambda s: s.name in children)
            for k, spec in enumerate(specs, 1):
                self.report(f"loading {spec.format} project {spec.name} ({k}/{len(specs)})"
                            + (", dbt parsing beside it" if children and spec.name not in children
                               else ""))  # fmt: skip
                t0 = time.perf_counter()
                child = children.pop(spec.name, None)
                if child is not None:
                    child.wait()
                loaded[spec.name] = self.provider(spec.name).load()
                self.loaded_projects[spec.name] = [n.id for n in loaded[spec.name]]
                self.timings.add(f"load:{spec.name}", time.perf_counter() - t0)
        finally:
            for child in children.values():  # a load failed: the other parses are not needed
                child.kill()
                child.wait()
        nodes: list[Node] = [n for spec in self.config.projects for n in loaded[spec.name]]
        t0 = time.perf_counter()
        nodes.extend(
            ingestion_nodes(
                self.config.ingestion,
                self.root,
                dialect=self.dialect,
                default_catalog=self.default_catalog,
            )
        )
        nodes.extend(dashboard_nodes(self.config.dashboards))
        if self.config.bi:
            from splice.bi.nodes import workspace_bi_nodes

            nodes.extend(workspace_bi_nodes(self.root, self.config.bi, dialect=self.dialect,
                                            default_catalog=self.default_catalog))  # fmt: skip
        self._graph = join(
            nodes, self.config, dialect=self.dialect, default_catalog=self.default_catalog
        )
        self.timings.add("join", time.perf_counter() - t0)
        return self._graph

    # -- state ---------------------------------------------------------------------------------
    @property
    def witness_path(self) -> Path:
        return (self.root / self.config.workspace.witness).resolve()

    @property
    def state_path(self) -> Path:
        return (self.root / self.config.workspace.state).resolve()

    @property
    def state_url(self) -> str | None:
        """``[state] url`` with the password from ``[state] password_env`` (None: SQLite)."""
        st = self.config.state
        if not st.url:
            return None
        if not st.password_env:
            return st.url
        password = os.environ.get(st.password_env)
        if password is None:
            from splice.errors import StateError

            raise StateError(
                f"[state] password_env names {st.password_env}, which is not set.",
                fix=f"export {st.password_env}=... (the state database user's password)",
            )
        from urllib.parse import quote

        scheme, rest = st.url.split("://", 1)
        user, _, host = rest.rpartition("@")
        user = user.split(":", 1)[0]
        return f"{scheme}://{user}:{quote(password, safe='')}@{host}" if user else st.url

    @property
    def state_exists(self) -> bool:
        return self.config.state.url is not None or self.state_path.exists()

    @property
    def state(self) -> StateStore:
        if self._state is None:
            from splice.state.witnessed import open_witnessed

            url = self.state_url
            where = url if url else self.state_path
            if url:
                self.ensure_warehouse()  # the state may be kept on the workspace's own server

            def opener() -> StateStore:
                from splice.state.anchors import build

                return open_witnessed(
                    where,
                    self.witness_path,
                    new_state=self.new_state,
                    anchors=build(self.config.audit.anchors, self.root),
                    signer=self.signer,
                )

            pool = self.state_pool
            if pool is not None and not url and not self.new_state:
                self._state = pool.borrow(self.state_path, self.witness_path, opener)
            else:
                self._state = opener()
        return self._state

    def signer(self) -> Signer:
        """The key this process signs audit-log entries with: the server's when
        ``splice serve`` set one for the process, else the workspace's local key."""
        from splice.state import signing

        chosen = signing.process_signer()
        if chosen is not None:
            return chosen
        if self._signer is None:
            self._signer = signing.from_file(self.root / signing.LOCAL_KEY)
        return self._signer

    def server_signer(self) -> Signer:
        """The key ``[serve]`` names for the server (made when it is a missing file)."""
        from splice.state import signing

        sv = self.config.serve
        if sv.signing_command:
            return signing.from_command(list(sv.signing_command), sv.signing_public_key or "")
        if sv.signing_key_env:
            return signing.from_env(sv.signing_key_env)
        path = Path(sv.signing_key)
        return signing.from_file(path if path.is_absolute() else self.root / path)

    def close(self) -> None:
        for p in self._providers.values():
            p.close()
        self._providers.clear()
        if self._state is not None:
            if self.state_pool is not None:  # it closes what it did not lend
                self.state_pool.give_back(self._state)
            else:
                self._state.close()
            self._state = None


def _dbt_default_target(root: Path) -> str | None:
    """For a lone dbt project with no splice.toml: the profile's own default target (where dbt
    looks: the project directory, then $DBT_PROFILES_DIR, then ~/.dbt)."""
    import os

    import yaml

    try:
        proj = yaml.safe_load((root / "dbt_project.yml").read_text()) or {}
        dirs = [root, os.environ.get("DBT_PROFILES_DIR"), Path.home() / ".dbt"]
        prof_file = next(
            (Path(d) / "profiles.yml" for d in dirs if d and (Path(d) / "profiles.yml").exists()),
            None,
        )
        if prof_file is None:
            return None
        profiles = yaml.safe_load(prof_file.read_text()) or {}
        target = (profiles.get(proj.get("profile")) or {}).get("target")
    except Exception:  # noqa: BLE001 - dbt itself reports a broken profile
        return None
    # a target chosen by Jinja ({{ env_var(...) }}) is dbt's to render: keep Splice's default
    return str(target) if target and "{{" not in str(target) else None
