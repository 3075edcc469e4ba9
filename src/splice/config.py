"""splice.toml: the workspace configuration.

Every section is a pydantic model with ``extra="forbid"``, so a misspelt key is an error that
names the file and the key.  A directory with no splice.toml that is itself a dbt project
(``dbt_project.yml``) or a SQLMesh project (``config.yaml`` / ``config.py``) is a workspace of one
project.

>>> cfg = WorkspaceConfig.model_validate({"projects": [{"name": "p", "format": "dbt", "path": "."}]})
>>> cfg.projects[0].format
'dbt'
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from splice.errors import ConfigError

CONFIG_FILE = "splice.toml"
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorkspaceSection(_Strict):
    name: str = "workspace"
    default_target: str = "prod"
    state: str = ".splice/state.db"  # a path relative to the workspace, or a SQLAlchemy URL later


class WarehouseSection(_Strict):
    type: Literal["duckdb"] = "duckdb"
    path: str = "warehouse.duckdb"
    dialect: str = "duckdb"


class ProjectSection(_Strict):
    name: str = Field(pattern=NAME_PATTERN)
    format: Literal["dbt", "sqlmesh"]
    path: str
    # dbt: profile target per Splice target; SQLMesh: virtual environment per Splice target.
    # [targets.NAME.environments] overrides these.
    environments: dict[str, str] = Field(default_factory=dict)
    profiles_dir: str | None = None  # dbt only; defaults to the project directory
    gateway: str | None = None  # SQLMesh only


class BindingSection(_Strict):
    writer: str  # node id, e.g. pricing:marts.agg_gmv_daily
    reader: str  # node id, e.g. finance:source:pricing.agg_gmv_daily


class TargetSection(_Strict):
    environments: dict[str, str] = Field(default_factory=dict)


class IngestionSection(_Strict):
    name: str = Field(pattern=NAME_PATTERN)
    runner: Literal["dlt", "command", "dagster"] = "command"
    writes: list[str] = Field(default_factory=list)  # relations, e.g. raw.fx_rates
    reads: list[str] = Field(default_factory=list)  # external systems, free text (vendor URLs)
    command: list[str] = Field(default_factory=list)  # for runner=command (and dlt scripts)
    pipeline_name: str | None = None  # dlt: read the tables it writes from its own schema
    pipelines_dir: str | None = None
    dataset: str | None = None
    owner: str | None = None
    description: str | None = None


class DashboardSection(_Strict):
    name: str = Field(pattern=NAME_PATTERN)
    reads: list[str]  # node ids or relations
    tool: str = "declared"
    url: str | None = None
    owner: str | None = None
    label: str | None = None


Sensitivity = Literal["low", "medium", "high"]
Grain = Literal["day", "week", "month"]


class WatchSection(_Strict):
    """``[watch]``: how ``splice watch`` measures and judges (see splice.watch)."""

    default_monitors: bool = True  # volume, null rate, distinct, duplicates, values per node
    exclude: list[str] = Field(default_factory=list)  # node ids with no default monitors
    sensitivity: Sensitivity = "medium"
    calendar: str = "ECB"  # publishing calendar (holidays.financial_holidays code) or "none"
    training_days: int = Field(default=56, ge=14, le=3660)
    late_days: int = Field(default=7, ge=0, le=366)


class MetricSection(_Strict):
    """``[[metrics]]``: a number people care about, measured per interval in the warehouse."""

    name: str = Field(pattern=NAME_PATTERN)
    node: str  # node id, e.g. pricing:marts.agg_gmv_daily
    time: str  # a date or timestamp column of the node
    value: str  # one aggregate SQL expression, e.g. sum(gmv_usd)
    dimensions: list[str] = Field(default_factory=list)
    grain: Grain = "day"
    owner: str | None = None
    domain: str | None = None
    description: str | None = None
    sensitivity: Sensitivity | None = None  # defaults to [watch].sensitivity
    calendar: str | None = None  # defaults to [watch].calendar
    detectors: list[str] | None = None  # a subset of the value detectors; default: all


class WorkspaceConfig(_Strict):
    workspace: WorkspaceSection = Field(default_factory=WorkspaceSection)
    warehouse: WarehouseSection = Field(default_factory=WarehouseSection)
    projects: list[ProjectSection] = Field(default_factory=list)
    bindings: list[BindingSection] = Field(default_factory=list)
    targets: dict[str, TargetSection] = Field(default_factory=dict)
    ingestion: list[IngestionSection] = Field(default_factory=list)
    dashboards: list[DashboardSection] = Field(default_factory=list)
    metrics: list[MetricSection] = Field(default_factory=list)
    watch: WatchSection = Field(default_factory=WatchSection)

    @field_validator("projects", "metrics")
    @classmethod
    def _unique_names(cls, v: list[Any], info: Any) -> list[Any]:
        what = {"projects": "project", "metrics": "metric"}[info.field_name]
        seen: set[str] = set()
        for item in v:
            if item.name in seen:
                raise ValueError(f"{what} name {item.name!r} is used twice")
            seen.add(item.name)
        return v

    def environment_for(self, project: str, target: str) -> str:
        """The environment of ``project`` in Splice target ``target`` (defaults to the target name)."""
        t = self.targets.get(target)
        if t and project in t.environments:
            return t.environments[project]
        for p in self.projects:
            if p.name == project and target in p.environments:
                return p.environments[target]
        return target


def _loc(err: Any) -> str:
    parts: list[str] = []
    for p in err["loc"]:
        if isinstance(p, int):
            parts[-1] = f"{parts[-1]}[{p}]" if parts else f"[{p}]"
        else:
            parts.append(str(p))
    return ".".join(parts) or "(top level)"


def parse_config(text: str, source: str = CONFIG_FILE) -> WorkspaceConfig:
    """Parse and validate splice.toml text; errors name the file and the key.

    >>> parse_config('[workspace]\\nnmae = "x"')
    Traceback (most recent call last):
    ...
    splice.errors.ConfigError: splice.toml: unknown key 'workspace.nmae'.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(
            f"{source}: not valid TOML: {e}.", fix=f"correct the syntax of {source}"
        ) from e
    try:
        return WorkspaceConfig.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        key = _loc(err)
        if err["type"] == "extra_forbidden":
            raise ConfigError(
                f"{source}: unknown key '{key}'.",
                fix="remove it or correct its spelling (see docs/configuration.md)",
            ) from None
        if err["type"] == "missing":
            raise ConfigError(f"{source}: missing key '{key}'.", fix=f"add '{key}'") from None
        raise ConfigError(f"{source}: {key}: {err['msg']}.", fix=f"correct '{key}'") from None


def detect_single_project(root: Path) -> ProjectSection | None:
    """A directory that is itself a dbt or SQLMesh project becomes a one-project workspace."""
    if (root / "dbt_project.yml").exists():
        import yaml

        try:
            name = yaml.safe_load((root / "dbt_project.yml").read_text()).get("name") or root.name
        except Exception:  # noqa: BLE001 - the dbt provider reports the real parse error later
            name = root.name
        return ProjectSection(name=_project_name(str(name)), format="dbt", path=".")
    if (
        any((root / f).exists() for f in ("config.yaml", "config.yml", "config.py"))
        and (root / "models").is_dir()
    ):
        return ProjectSection(name=_project_name(root.name), format="sqlmesh", path=".")
    return None


def _project_name(text: str) -> str:
    """A project name (``NAME_PATTERN``) from a directory or dbt project name.

    >>> _project_name("shop.v2"), _project_name("2024 shop"), _project_name("")
    ('shop_v2', '_2024_shop', 'project')
    """
    import re

    name = re.sub(r"[^A-Za-z0-9_\-]", "_", text.strip())
    if not name:
        return "project"
    return name if re.match(r"[A-Za-z_]", name) else f"_{name}"


def load_config(root: Path) -> WorkspaceConfig:
    """Load ``root/splice.toml``, or infer a one-project workspace from ``root``."""
    path = root / CONFIG_FILE
    if path.exists():
        cfg = parse_config(path.read_text(), str(path))
    else:
        single = detect_single_project(root)
        if single is None:
            raise ConfigError(
                f"no {CONFIG_FILE} in {root}, and it is not a dbt or SQLMesh project.",
                fix=f"run splice in a workspace directory, pass --workspace DIR, or create {CONFIG_FILE}",
            )
        cfg = WorkspaceConfig(projects=[single])
        # a lone dbt/SQLMesh project keeps its own warehouse; Splice reads it through the tool.
    for i, p in enumerate(cfg.projects):
        ppath = (root / p.path).resolve()
        if not ppath.is_dir():
            raise ConfigError(
                f"{path}: projects[{i}].path: project {p.name!r} points to {ppath}, which does not exist.",
                fix=f"correct projects[{i}].path (it is relative to {root})",
            )
    return cfg
