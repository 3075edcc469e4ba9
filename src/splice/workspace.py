"""The library facade: everything the CLI and the MCP tools do goes through :class:`Workspace`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splice.config import CONFIG_FILE, WorkspaceConfig, load_config
from splice.errors import ConfigError
from splice.graph.bindings import join
from splice.graph.model import Graph, Node
from splice.graph.relations import normalise_identifier
from splice.providers.base import LoadContext
from splice.providers.dashboards import dashboard_nodes
from splice.providers.ingestion import ingestion_nodes
from splice.state.store import StateStore


@dataclass
class Timings:
    phases: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.phases[name] = self.phases.get(name, 0.0) + seconds


class Workspace:
    """A Splice workspace: its config, its projects' providers, the joined graph and the state.

    Open it with :meth:`open`; close it (or use ``with``) so the tools release the warehouse.
    """

    def __init__(self, root: Path, config: WorkspaceConfig, target: str | None = None) -> None:
        self.root = root
        self.config = config
        self.target = target or config.workspace.default_target
        if config.targets and self.target not in config.targets:
            raise ConfigError(
                f"{root / CONFIG_FILE}: target {self.target!r} is not defined.",
                fix=f"use --target with one of: {', '.join(sorted(config.targets))}",
            )
        self.dialect = config.warehouse.dialect
        self.has_config = (root / CONFIG_FILE).exists()
        self.default_catalog = (
            normalise_identifier(Path(config.warehouse.path).stem, self.dialect)
            if self.has_config
            else None
        )
        self._providers: dict[str, Any] = {}
        self._graph: Graph | None = None
        self._lone_warehouse: Path | None = None
        self._state: StateStore | None = None
        self.timings = Timings()

    @classmethod
    def open(cls, root: Path | str = ".", target: str | None = None) -> Workspace:
        root = Path(root).resolve()
        if not root.is_dir():
            raise ConfigError(
                f"workspace {root} does not exist.",
                fix="pass --workspace DIR of an existing directory",
            )
        return cls(root, load_config(root), target)

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
            from splice.errors import SpliceError

            try:
                loc = self.provider(self.config.projects[0].name).warehouse()
            except SpliceError:  # the tool reports its broken config when it loads
                loc = None
            self._lone_warehouse = (
                Path(loc.path)
                if loc is not None and loc.kind == "file" and loc.path
                else (self.root / self.config.warehouse.path).resolve()
            )
        return self._lone_warehouse

    # -- providers -----------------------------------------------------------------------------
    def environment(self, project: str) -> str:
        return self.config.environment_for(project, self.target)

    def provider(self, project: str) -> Any:
        if project in self._providers:
            return self._providers[project]
        spec = next((p for p in self.config.projects if p.name == project), None)
        if spec is None:
            raise ConfigError(f"no project named {project!r} in {self.root / CONFIG_FILE}.")
        ctx = LoadContext(
            root=self.root,
            project_name=spec.name,
            project_path=(self.root / spec.path).resolve(),
            target=self.target,
            environment=self._tool_environment(spec.name, spec.format),
            dialect=self.dialect,
            default_catalog=self.default_catalog,
            log_path=self.log_path,
            work_dir=self.splice_dir / spec.format / spec.name,
            options={
                "profiles_dir": (self.root / spec.profiles_dir).resolve()
                if spec.profiles_dir
                else None,
                "gateway": spec.gateway,
            },
        )
        if spec.format == "dbt":
            from splice.providers.dbt import DbtProvider

            prov: Any = DbtProvider(ctx)
        else:
            from splice.providers.sqlmesh import SqlmeshProvider

            prov = SqlmeshProvider(ctx)
        self._providers[project] = prov
        return prov

    def loaded_providers(self, fmt: str, *, but: str | None = None) -> list[Any]:
        """The providers of format ``fmt`` already created (other than project ``but``)."""
        return [p for name, p in self._providers.items() if p.format == fmt and name != but]

    def _tool_environment(self, project: str, fmt: str) -> str:
        env = self.environment(project)
        if fmt == "dbt" and not self.has_config and not self.config.targets:
            return _dbt_default_target(self.root) or env
        return env

    # -- graph -------------------------------------------------------------------------------
    def graph(self) -> Graph:
        if self._graph is not None:
            return self._graph
        nodes: list[Node] = []
        for spec in self.config.projects:
            t0 = time.perf_counter()
            nodes.extend(self.provider(spec.name).load())
            self.timings.add(f"load:{spec.name}", time.perf_counter() - t0)
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
        self._graph = join(
            nodes, self.config, dialect=self.dialect, default_catalog=self.default_catalog
        )
        self.timings.add("join", time.perf_counter() - t0)
        return self._graph

    # -- state ---------------------------------------------------------------------------------
    @property
    def state(self) -> StateStore:
        if self._state is None:
            state = self.config.workspace.state
            self._state = StateStore.open((self.root / state).resolve())
        return self._state

    def close(self) -> None:
        for p in self._providers.values():
            p.close()
        self._providers.clear()
        if self._state is not None:
            self._state.close()
            self._state = None


def _dbt_default_target(root: Path) -> str | None:
    """For a lone dbt project with no splice.toml: the profile's own default target."""
    import yaml

    try:
        proj = yaml.safe_load((root / "dbt_project.yml").read_text()) or {}
        prof_file = root / "profiles.yml"
        if not prof_file.exists():
            prof_file = Path.home() / ".dbt" / "profiles.yml"
        profiles = yaml.safe_load(prof_file.read_text()) or {}
        return (profiles.get(proj.get("profile")) or {}).get("target")
    except Exception:  # noqa: BLE001 - dbt itself reports a broken profile
        return None
