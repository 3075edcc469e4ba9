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

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from splice.config.base import NAME_PATTERN, Strict
from splice.config.bi import BISection
from splice.config.durations import parse_duration
from splice.config.notify import NotifySection
from splice.config.operator import OperatorSection, ScheduleSection
from splice.config.orchestrators import AirflowDag, DagsterJob
from splice.config.serve import ServeSection
from splice.config.warehouse import WarehouseSection, known_dialect
from splice.errors import ConfigError

CONFIG_FILE = "splice.toml"


class WorkspaceSection(Strict):
    name: str = "workspace"
    default_target: str = "prod"
    state: str = ".splice/state.db"  # a path relative to the workspace, or a SQLAlchemy URL later
    # a file outside .splice/ that remembers the state's id and the audit log's head
    witness: str = "splice-witness.json"


class ProjectSection(Strict):
    name: str = Field(pattern=NAME_PATTERN)
    format: Literal["dbt", "sqlmesh"]
    path: str
    # dbt: profile target per Splice target; SQLMesh: virtual environment per Splice target.
    # [targets.NAME.environments] overrides these.
    environments: dict[str, str] = Field(default_factory=dict)
    profiles_dir: str | None = None  # dbt only; defaults to the project directory
    gateway: str | None = None  # SQLMesh only
    # dbt only: the SQL dialect the models are written in, when it is not the adapter's (a
    # project written in Snowflake SQL run on DuckDB); column lineage parses it in this one
    dialect: str | None = None

    @field_validator("dialect")
    @classmethod
    def _known_dialect(cls, v: str | None) -> str | None:
        return known_dialect(v) if v else None

    @model_validator(mode="after")
    def _dialect_for_dbt(self) -> ProjectSection:
        if self.dialect and self.format != "dbt":
            raise ValueError(
                f"project {self.name!r}: dialect is for dbt projects; a SQLMesh model names its "
                "own (model_defaults.dialect in the project's config, or dialect in its MODEL)"
            )
        return self


class BindingSection(Strict):
    writer: str  # node id, e.g. pricing:marts.agg_gmv_daily
    reader: str  # node id, e.g. finance:source:pricing.agg_gmv_daily


class TargetSection(Strict):
    """``[targets.NAME]``: each project's environment in this target; optionally a warehouse
    of its own (``[targets.NAME.warehouse]``, the same keys as ``[warehouse]``: a target on
    another engine, the destination of ``splice migrate``) and the SQLMesh gateway each
    SQLMesh project uses there (``gateways``, by project name).

    >>> t = TargetSection.model_validate({"environments": {"pricing": "prod"},
    ...     "warehouse": {"type": "postgres", "url": "postgresql://me@db/warehouse"},
    ...     "gateways": {"pricing": "pg"}})
    >>> t.warehouse.dialect, t.gateways["pricing"]
    ('postgres', 'pg')
    """

    environments: dict[str, str] = Field(default_factory=dict)
    warehouse: WarehouseSection | None = None
    gateways: dict[str, str] = Field(default_factory=dict)


class IngestionSection(Strict):
    name: str = Field(pattern=NAME_PATTERN)
    runner: Literal["dlt", "command", "dagster", "airflow"] = "command"
    writes: list[str] = Field(default_factory=list)  # relations, e.g. raw.fx_rates
    reads: list[str] = Field(default_factory=list)  # external systems, free text (vendor URLs)
    command: list[str] = Field(default_factory=list)  # for runner=command (and dlt scripts)
    pipeline_name: str | None = None  # dlt: read the tables it writes from its own schema
    pipelines_dir: str | None = None
    dataset: str | None = None
    owner: str | None = None
    description: str | None = None
    dagster: DagsterJob | None = None  # [ingestion.dagster], with runner = "dagster"
    airflow: AirflowDag | None = None  # [ingestion.airflow], with runner = "airflow"

    @model_validator(mode="after")
    def _runner_settings(self) -> IngestionSection:
        for system in ("dagster", "airflow"):
            table = getattr(self, system)
            if self.runner == system and table is None:
                what = "url (the webserver) and job" if system == "dagster" else "url and dag"
                raise ValueError(
                    f'ingestion {self.name!r} has runner = "{system}" but no '
                    f"[ingestion.{system}] table: give it {what}"
                )
            if table is not None and self.runner != system:
                raise ValueError(
                    f"ingestion {self.name!r} has an [ingestion.{system}] table but runner = "
                    f'{self.runner!r}: set runner = "{system}" (or remove the table)'
                )
        return self

    @property
    def orchestrated(self) -> bool:
        """Whether an orchestrator (not Splice) runs the job."""
        return self.dagster is not None or self.airflow is not None

    @property
    def orchestrator(self) -> DagsterJob | AirflowDag | None:
        """The orchestrator's table of the job (``[ingestion.dagster]`` / ``[ingestion.airflow]``)."""
        return self.dagster or self.airflow


class DashboardSection(Strict):
    name: str = Field(pattern=NAME_PATTERN)
    reads: list[str]  # node ids or relations
    tool: str = "declared"
    url: str | None = None
    owner: str | None = None
    label: str | None = None


Sensitivity = Literal["low", "medium", "high"]
Grain = Literal["day", "week", "month"]


class WatchSection(Strict):
    """``[watch]``: how ``splice watch`` measures and judges (see splice.watch)."""

    default_monitors: bool = True  # volume, null rate, distinct, duplicates, values per node
    exclude: list[str] = Field(default_factory=list)  # node ids with no default monitors
    sensitivity: Sensitivity = "medium"
    calendar: str = "ECB"  # publishing calendar (holidays.financial_holidays code) or "none"
    training_days: int = Field(default=56, ge=14, le=3660)
    late_days: int = Field(default=7, ge=0, le=366)


class MetricSection(Strict):
    """``[[metrics]]``: a number people care about, measured per interval in the warehouse."""

    name: str = Field(pattern=NAME_PATTERN)
    # SQL written here: the node, its time column and one aggregate ...
    node: str | None = None  # node id, e.g. pricing:marts.agg_gmv_daily
    time: str | None = None  # a date or timestamp column of the node
    value: str | None = None  # one aggregate SQL expression, e.g. sum(gmv_usd)
    dimensions: list[str] = Field(default_factory=list)
    # ... or a metric of a dbt project's semantic layer, compiled by MetricFlow
    semantic: str | None = None  # the semantic-layer metric's name, e.g. gmv
    project: str | None = None  # the dbt project declaring it (when several could)
    group_by: list[str] = Field(default_factory=list)  # its dimensions, as MetricFlow names them
    grain: Grain = "day"
    owner: str | None = None
    domain: str | None = None
    description: str | None = None
    sensitivity: Sensitivity | None = None  # defaults to [watch].sensitivity
    calendar: str | None = None  # defaults to [watch].calendar
    detectors: list[str] | None = None  # a subset of the value detectors; default: all

    @model_validator(mode="after")
    def _sql_or_semantic(self) -> MetricSection:
        sql_keys = [k for k in ("node", "time", "value") if getattr(self, k) is not None]
        if self.semantic is not None:
            extra = sql_keys + (["dimensions"] if self.dimensions else [])
            if extra:
                raise ValueError(
                    f"metric {self.name!r}: semantic = {self.semantic!r} takes its SQL from the "
                    f"semantic layer; remove {', '.join(extra)} (dimensions are group_by here)"
                )
            return self
        missing = [k for k in ("node", "time", "value") if getattr(self, k) is None]
        if missing:
            raise ValueError(
                f"metric {self.name!r}: set {', '.join(missing)} (a metric written as SQL), or "
                'semantic = "METRIC" for a metric of a dbt project\'s semantic layer '
                "(`splice metrics discover` lists them)"
            )
        if self.project is not None or self.group_by:
            raise ValueError(
                f"metric {self.name!r}: project and group_by are for semantic metrics; "
                "a metric written as SQL names its node and dimensions"
            )
        return self


Autonomy = Literal["L0", "L1", "L2", "L3", "L4"]


class DomainSection(Strict):
    """``[[domains]]``: who answers for a set of nodes, and how much Splice may do there alone."""

    name: str = Field(pattern=NAME_PATTERN)
    nodes: list[str] = Field(min_length=1)  # node selectors (splice.graph.selectors syntax)
    owners: list[str]  # named people, in escalation order
    autonomy: Autonomy = "L1"
    description: str | None = None

    @field_validator("nodes")
    @classmethod
    def _selectors_parse(cls, v: list[str]) -> list[str]:
        # syntax only: a selector that matches no node is a doctor finding, not a load error
        from splice.errors import SelectorError
        from splice.graph.selectors import parse

        for text in v:
            try:
                if not parse(text).terms:
                    raise ValueError("an empty selector selects nothing")
            except SelectorError as e:
                raise ValueError(e.message) from None
        return v

    @field_validator("owners")
    @classmethod
    def _owners(cls, v: list[str]) -> list[str]:
        names = [o.strip() for o in v]
        if not names:
            raise ValueError("a domain needs at least one owner (names, in escalation order)")
        if any(not n for n in names):
            raise ValueError("an owner's name is empty")
        seen: set[str] = set()
        for n in names:
            if n.casefold() in seen:
                raise ValueError(f"owner {n!r} is listed twice")
            seen.add(n.casefold())
        return names


class PolicySection(Strict):
    """``[policy]``: approval expiry and escalation, and the record autonomy needs (splice.repair)."""

    approval_expiry: str = "4h"  # a pending request not approved by then expires
    escalate_after: str | None = None  # default: approval_expiry / number of the domain's owners
    proven_record: int = Field(default=3, ge=1, le=1000)  # clean applications in a row for L3/L4
    #: honour the CLI's ``--as NAME`` (recorded as auth ``cli-as``): a single-user set-up only;
    #: otherwise the CLI records the operating-system user who runs it.
    allow_as: bool = False
    #: ``server``: approve, reject, apply, undo, stop and resume only through ``splice serve``
    #: (an authenticated principal), never from the CLI.
    decisions: Literal["anywhere", "server"] = "anywhere"
    #: names the command line's ``--as`` records as agents (``--kind agent`` without saying it)
    agents: list[str] = Field(default_factory=list)
    #: the public keys (``ed25519:BASE64``, from ``splice serve --print-key``) whose signature
    #: a decision entry must carry when ``decisions = "server"`` (splice.state.signing)
    server_keys: list[str] = Field(default_factory=list)

    @field_validator("server_keys")
    @classmethod
    def _keys(cls, v: list[str]) -> list[str]:
        import base64

        for k in v:
            ok = k.startswith("ed25519:")
            try:
                ok = ok and len(base64.b64decode(k[8:], validate=True)) == 32
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"{k!r} is not an Ed25519 public key (ed25519:BASE64, as "
                                 "`splice serve --print-key` prints)")  # fmt: skip
        return v

    @field_validator("approval_expiry")
    @classmethod
    def _expiry(cls, v: str) -> str:
        parse_duration(v)
        return v

    @field_validator("escalate_after")
    @classmethod
    def _escalation_before_expiry(cls, v: str | None, info: Any) -> str | None:
        if v is None:
            return v
        expiry = info.data.get("approval_expiry")
        if expiry is not None and parse_duration(v) > parse_duration(expiry):
            raise ValueError(
                f"{v} is longer than approval_expiry ({expiry}): a request would expire "
                "before it escalates"
            )
        return v

    @property
    def expiry_seconds(self) -> int:
        return parse_duration(self.approval_expiry)

    def escalate_seconds(self, owners: int) -> float:
        """Seconds a request waits for one owner before the next is asked as well.

        >>> PolicySection().escalate_seconds(2), PolicySection(escalate_after="30m").escalate_seconds(2)
        (7200.0, 1800.0)
        """
        if self.escalate_after is not None:
            return float(parse_duration(self.escalate_after))
        return self.expiry_seconds / max(1, owners)


class ReviewSection(Strict):
    """``[review]``: how ``splice review`` builds and compares a pull request's head.

    >>> ReviewSection().target, ReviewSection().max_rows
    ('review', 1000000)
    """

    #: the Splice target the head is built in: each project's isolated environment (a SQLMesh
    #: virtual environment, a dbt target); never the prod target
    target: str = "review"
    max_models: int = Field(default=30, ge=1, le=10000)  # models built and compared at most
    max_rows: int = Field(default=1_000_000, ge=1000)  # above: compare a sample of the rows
    examples: int = Field(default=3, ge=0, le=50)  # changed values shown per column
    metric_intervals: int = Field(default=14, ge=1, le=3660)  # recent intervals per metric
    comment_limit: int = Field(default=60_000, ge=2000, le=65_536)  # Markdown characters


class AccessSection(Strict):
    """``[access]``: read access granted through ``splice access request`` (approved like a
    repair, revoked when its time is up).

    >>> AccessSection().max_hours, AccessSection().role_prefix
    (168.0, 'splice_')
    """

    max_hours: float = Field(default=168.0, gt=0, le=24 * 366)  # the longest a grant may run
    #: the warehouse roles Splice makes start with this (one role per grant)
    role_prefix: str = Field(default="splice_", pattern=r"^[a-z_][a-z0-9_]{0,20}$")
    #: principal name -> the warehouse role it reads as (``--for`` takes either)
    roles: dict[str, str] = Field(default_factory=dict)


class AnchorSection(Strict):
    """One place outside the workspace that keeps the audit log's heads (``[[audit.anchors]]``,
    :mod:`splice.state.anchors`): ``postgres`` (``url``, ``table``, ``password_env``), ``git``
    (``repo``, ``remote``, ``branch``) or ``webhook`` (``url``, ``read_url``, ``token_env``).

    >>> AnchorSection(type="git", repo="anchors").branch
    'splice-audit'
    """

    type: Literal["postgres", "git", "webhook"]
    name: str | None = None
    url: str | None = None
    table: str = Field(default="splice_audit_anchor", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
    password_env: str | None = None
    repo: str | None = None
    remote: str | None = None
    branch: str = "splice-audit"
    read_url: str | None = None
    token_env: str | None = None

    @model_validator(mode="after")
    def _needs(self) -> AnchorSection:
        need = {"postgres": "url", "git": "repo", "webhook": "url"}[self.type]
        if not getattr(self, need):
            raise ValueError(f"an anchor of type {self.type!r} needs {need!r}")
        return self


class AuditSection(Strict):
    """``[audit]``: where the audit log's heads are kept besides the witness file."""

    anchors: list[AnchorSection] = Field(default_factory=list)


class StateSection(Strict):
    """``[state]``: where Splice keeps its own state when the team shares it: a PostgreSQL
    database (``url``, the password from the variable ``password_env`` names). Without it the
    state is the SQLite file ``[workspace] state``.

    >>> StateSection(url="postgresql+psycopg://splice@db:5432/splice").url is not None
    True
    """

    url: str | None = None
    password_env: str | None = None

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, v: str | None) -> str | None:
        if v is not None and v.split("://", 1)[0].split("+", 1)[0] not in (
            "postgresql",
            "postgres",
        ):
            raise ValueError(
                f"{v!r} is not a postgresql:// URL (postgresql+psycopg://USER@HOST/DB)"
            )
        return v


class WorkspaceConfig(Strict):
    workspace: WorkspaceSection = Field(default_factory=WorkspaceSection)
    state: StateSection = Field(default_factory=StateSection)
    warehouse: WarehouseSection = Field(default_factory=WarehouseSection)
    projects: list[ProjectSection] = Field(default_factory=list)
    bindings: list[BindingSection] = Field(default_factory=list)
    targets: dict[str, TargetSection] = Field(default_factory=dict)
    ingestion: list[IngestionSection] = Field(default_factory=list)
    dashboards: list[DashboardSection] = Field(default_factory=list)
    bi: list[BISection] = Field(default_factory=list)
    metrics: list[MetricSection] = Field(default_factory=list)
    watch: WatchSection = Field(default_factory=WatchSection)
    review: ReviewSection = Field(default_factory=ReviewSection)
    access: AccessSection = Field(default_factory=AccessSection)
    domains: list[DomainSection] = Field(default_factory=list)
    policy: PolicySection = Field(default_factory=PolicySection)
    serve: ServeSection = Field(default_factory=ServeSection)
    audit: AuditSection = Field(default_factory=AuditSection)
    notify: list[NotifySection] = Field(default_factory=list)
    schedule: list[ScheduleSection] = Field(default_factory=list)
    operator: OperatorSection = Field(default_factory=OperatorSection)

    @model_validator(mode="after")
    def _bi_names(self) -> WorkspaceConfig:
        taken = {p.name for p in self.projects} | {"dashboards", "ingestion"}
        seen: set[str] = set()
        for b in self.bi:
            if b.name in taken or b.name in seen:
                raise ValueError(
                    f"bi name {b.name!r} is taken (by a project, another [[bi]], or Splice's "
                    "own dashboards/ingestion): its dashboards are nodes of a project of that name"
                )
            seen.add(b.name)
        return self

    @field_validator("projects", "metrics", "domains", "notify", "schedule")
    @classmethod
    def _unique_names(cls, v: list[Any], info: Any) -> list[Any]:
        what = {"projects": "project", "metrics": "metric", "domains": "domain",
                "notify": "notify channel", "schedule": "schedule"}[info.field_name]  # fmt: skip
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
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{source}: {key}: {msg}.", fix=f"correct '{key}'") from None


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
    name = re.sub(r"[^A-Za-z0-9_\-]", "_", text.strip())
    if not name:
        return "project"
    return name if re.match(r"[A-Za-z_]", name) else f"_{name}"


def _read_config_text(path: Path) -> str:
    """splice.toml's text, or a ConfigError saying why it cannot be read."""
    if path.is_dir():
        raise ConfigError(
            f"{path} is a directory, not a file.",
            fix=f"move the directory aside; {CONFIG_FILE} must be a TOML file (see docs/configuration.md)",
        )
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {e.start}: {e.reason}).",
            fix=f"save {CONFIG_FILE} as UTF-8",
        ) from None
    except OSError as e:
        raise ConfigError(
            f"{path} cannot be read: {e.strerror or e}.", fix="check the file's permissions"
        ) from None
    try:
        empty = not tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        empty = False  # parse_config names the syntax error
    if empty:
        raise ConfigError(
            f"{path} is empty.",
            fix="declare [workspace] and at least one [[projects]] (see docs/configuration.md), "
            f"or delete {CONFIG_FILE} to use the lone dbt or SQLMesh project in this directory",
        )
    return text


def load_config(root: Path) -> WorkspaceConfig:
    """Load ``root/splice.toml``, or infer a one-project workspace from ``root``."""
    path = root / CONFIG_FILE
    if path.exists():
        cfg = parse_config(_read_config_text(path), str(path))
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
