"""Write the travel-marketplace workspace and build Q3 2026 in it, end to end.

The steps run one after another in this process (DuckDB lets one process write the file):
write the files, set the vendor's behaviour, load the rates (dlt, through the vendor over
HTTP), load the bookings, build both projects with ``splice run`` (SQLMesh's prod plan, then
``dbt build`` of the finance project, so Splice's evidence of every build is there), then
check the warehouse and record what was built in ``.splice/demo.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from splice.demo.capture import ToolOutput
from splice.demo.ecb import CURRENCIES
from splice.demo.layout import (
    BOOKINGS_SEED,
    CONFIG_FILE,
    FINANCE_DIR,
    LOG_FILE,
    PRICING_DIR,
    Q3_END,
    Q3_START,
    RECORD_FILE,
    DemoError,
    warehouse_path,
)
from splice.demo.vendor import check_incident, set_incident
from splice.errors import ConfigError, SpliceError

#: The top-level entries a demo workspace consists of (``force`` replaces only these).
DEMO_ENTRIES = (
    CONFIG_FILE,
    "README.md",
    ".gitignore",
    "warehouse.duckdb",
    "warehouse.duckdb.wal",
    "ingest",
    "vendor",
    PRICING_DIR,
    FINANCE_DIR,
    ".splice",
    "splice-witness.json",
)

GITIGNORE = """\
# built by `splice demo`; rebuild with `splice demo DIR --force`
warehouse.duckdb
warehouse.duckdb.wal
.splice/
splice-witness.json
.splice-witness.json.lock
pricing/.cache/
pricing/logs/
finance/target/
finance/logs/
__pycache__/
"""


@dataclass
class DemoResult:
    """What :func:`build_demo` built."""

    workspace: Path
    warehouse: Path | str  # the DuckDB file, or the PostgreSQL server (a URL without password)
    log_path: Path
    incident: str | None
    start: date
    end: date
    counts: dict[str, int] = field(default_factory=dict)
    steps: dict[str, float] = field(default_factory=dict)  # step -> seconds
    elapsed_seconds: float = 0.0
    orchestrator: str | None = None  # the Dagster webserver the rates feed runs in
    bi: str | None = None  # the BI tool's dashboard (--bi superset)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (for ``splice demo --json``)."""
        return {
            "workspace": str(self.workspace),
            "warehouse": str(self.warehouse),
            "log_path": str(self.log_path),
            "incident": self.incident,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "counts": dict(self.counts),
            "steps": dict(self.steps),
            "elapsed_seconds": self.elapsed_seconds,
            "orchestrator": self.orchestrator,
            "bi": self.bi,
        }


# -- writing the files ---------------------------------------------------------------------
def _templates() -> Traversable:
    return resources.files("splice.demo").joinpath("templates")


_RENDERED = {"profiles.yml.tmpl"}  # written by _write_profiles, not copied


def _copy_tree(src: Traversable, dest: Path) -> list[Path]:
    written: list[Path] = []
    dest.mkdir(parents=True, exist_ok=True)
    for item in sorted(src.iterdir(), key=lambda t: t.name):
        if item.name == "__pycache__":
            continue
        if item.is_dir():
            written += _copy_tree(item, dest / item.name)
        else:
            if item.name in _RENDERED:
                continue
            name = item.name.removesuffix(".tmpl")
            (dest / name).write_bytes(item.read_bytes())
            written.append(dest / name)
    return written


def _looks_like_demo(directory: Path) -> bool:
    if (directory / RECORD_FILE).exists():
        return True
    cfg = directory / CONFIG_FILE
    try:
        return cfg.exists() and 'name = "travel"' in cfg.read_text()
    except OSError:
        return False


def _prepare_directory(directory: Path, force: bool) -> None:
    if directory.exists() and not directory.is_dir():
        raise ConfigError(
            f"{directory} exists and is not a directory.", fix="pass a new or empty directory"
        )
    if not directory.exists():
        directory.mkdir(parents=True)
        return
    if not any(directory.iterdir()):
        return
    if not force:
        raise ConfigError(
            f"{directory} is not empty.",
            fix="pass a new or empty directory, or --force to replace a demo workspace built there",
        )
    if not _looks_like_demo(directory):
        raise ConfigError(
            f"{directory} is not empty and is not a demo workspace, so --force will not touch it.",
            fix="pass a new or empty directory",
        )
    for name in DEMO_ENTRIES:
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


PROFILES = f"{FINANCE_DIR}/profiles.yml"
WAREHOUSE_PLACEHOLDER = "__WAREHOUSE__"


def _write_profiles(workspace: Path) -> Path:
    text = _templates().joinpath(FINANCE_DIR, "profiles.yml.tmpl").read_text()
    # a JSON string is a valid double-quoted YAML scalar
    text = text.replace(WAREHOUSE_PLACEHOLDER, json.dumps(str(warehouse_path(workspace))))
    path = workspace / PROFILES
    path.write_text(text)
    return path


def relocate(workspace: Path) -> None:
    """Point a moved or copied demo workspace at its own warehouse.

    dbt resolves a relative DuckDB path against the working directory, so the finance
    project's profiles.yml holds the warehouse's absolute path; this rewrites it.
    (SQLMesh's config.py and the ingestion scripts find the warehouse from their own
    location and need nothing.)
    """
    workspace = Path(workspace).resolve()
    from splice.demo.pg import target_of

    if (workspace / CONFIG_FILE).exists() and target_of(workspace) is not None:
        return  # a PostgreSQL demo's profile names a server, not a path: nothing moves
    if not (workspace / PROFILES).exists():
        raise ConfigError(
            f"{workspace} is not a demo workspace (no {PROFILES}).",
            fix="pass the directory `splice demo` built",
        )
    _write_profiles(workspace)


def write_workspace(directory: Path, *, incident: str | None = None) -> list[Path]:
    """Write the workspace's files (nothing is built); returns the files written."""
    check_incident(incident)
    directory = Path(directory).resolve()
    written = _copy_tree(_templates(), directory)
    written.append(_write_profiles(directory))
    (directory / ".gitignore").write_text(GITIGNORE)
    written.append(directory / ".gitignore")
    written.append(set_incident(directory, incident))
    return written


# -- the tool steps ---------------------------------------------------------------------------
def _build_projects(workspace: Path, execution_time: datetime) -> dict[str, int]:
    """Build pricing (SQLMesh) and finance (dbt) with ``splice run``, as a user would, so the
    first ``splice plan`` afterwards finds Splice's evidence of every build (the tools' own
    output goes to ``.splice/logs/tools.log``)."""
    from splice import api

    with api.open_workspace(workspace) as ws:
        report = api.run(ws, execution_time=execution_time)
    if not report.ok:
        failed = [f"{n} ({r.message})" for n, r in report.nodes.items() if r.status == "failed"]
        bad_checks = [c for c, r in report.checks.items() if r.status in ("fail", "error")]
        raise DemoError(
            f"splice run {report.run_id} did not succeed: "
            + ("; ".join(failed[:3] + bad_checks[:3]) or "see the journal")
        )
    by_project: dict[str, int] = {}
    for r in report.nodes.values():
        if r.status == "success":
            by_project[r.project] = by_project.get(r.project, 0) + 1
    by_project["checks"] = sum(1 for c in report.checks.values() if c.status == "pass")
    by_project["run"] = 1
    return by_project


def _start_models_at(workspace: Path, start: date) -> None:
    """The SQLMesh models start at ``start`` (their default is the quarter's first day)."""
    config = workspace / PRICING_DIR / "config.py"
    text = config.read_text()
    old = f'start="{Q3_START.isoformat()}"'
    if old not in text:
        raise DemoError(f"{config}: no {old} to move the models' start to {start}.")
    config.write_text(text.replace(old, f'start="{start.isoformat()}"'))


def _check_warehouse(
    workspace: Path, through: date = Q3_END, start: date = Q3_START
) -> dict[str, int]:
    from splice.demo.pg import catalog_of, target_of
    from splice.demo.pg import connect as pg_connect
    from splice.demo.spark import CATALOG, remote_of

    if remote_of(workspace) is not None:
        from splice.api import SparkConnection
        from splice.demo.spark import session

        with session(workspace) as s:
            return _counts(SparkConnection(s, "", owned=False), CATALOG, "spark", through, start)
    postgres = target_of(workspace) is not None
    if postgres:
        con = pg_connect(workspace)
    else:
        import duckdb

        con = duckdb.connect(str(warehouse_path(workspace)))
    try:
        return _counts(con, catalog_of(workspace), "postgres" if postgres else "duckdb",
                       through, start)  # fmt: skip
    finally:
        con.close()


def _counts(con: Any, catalog: str, dialect: str, through: date, start: date) -> dict[str, int]:
    """Row and day counts of the built warehouse; a DemoError naming what is missing."""
    from sqlglot import exp

    def one(table: str, what: str | None = None) -> int:
        schema, name = table.split(".")
        count = exp.Count(this=exp.Distinct(expressions=[exp.column(what)]) if what else exp.Star())
        q = exp.select(count).from_(exp.table_(name, db=schema, catalog=catalog))
        row = con.execute(q.sql(dialect)).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    counts = {
        "currencies": one("raw.fx_rates", "currency"),
        "rate_days": one("raw.fx_rates", "rate_date"),
        "fx_rates": one("raw.fx_rates"),
        "bookings": one("raw.bookings"),
        "booking_days": one("raw.bookings", "booking_date"),
        "gmv_days": one("marts.agg_gmv_daily", "booking_date"),
        "converted_bookings": one("marts.fct_bookings_usd"),
        "qtd_days": one("finance.fct_gmv_qtd"),
    }
    days = (through - start).days + 1
    problems = [
        f"{k} = {counts[k]}, expected {v}"
        for k, v in {
            "booking_days": days,
            "gmv_days": days,
            "qtd_days": days,
            "converted_bookings": counts["bookings"],
            "currencies": len(CURRENCIES),
        }.items()
        if counts[k] != v
    ]
    if problems:
        raise DemoError("the warehouse is incomplete: " + "; ".join(problems))
    return counts


# -- the build -----------------------------------------------------------------------------
def _pg_message(pg: Any) -> str:
    if pg is None:
        return "Starting a throwaway PostgreSQL in the workspace (.splice/postgres)"
    return f"Pointing the projects at PostgreSQL {pg.host}:{pg.port}/{pg.database}"


def build_demo(
    directory: Path,
    *,
    incident: str | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    through: date = Q3_END,
    start: date = Q3_START,
    warehouse: str = "duckdb",
    warehouse_url: str | None = None,
    state_url: str | None = None,
    orchestrator: str | None = None,
    bookings_scale: int = 1,
    bi: str | None = None,
) -> DemoResult:
    """Write the demo workspace into ``directory`` and build Q3 2026 in it.

    ``warehouse="postgres"`` builds it on PostgreSQL: in the database ``warehouse_url`` names
    (its password, if any, is handed to the tools through ``$SPLICE_DEMO_PG_PASSWORD``), or,
    with no URL, on a throwaway server Splice starts in the workspace and stops when the
    build is done (:mod:`splice.demo.pg`). ``state_url``: keep Splice's own state in that
    PostgreSQL database (``[state] url``) instead of ``.splice/state.db``.

    ``orchestrator="dagster"``: the rates feed is the Dagster job ``fx_rates_ingest``
    (``orchestration/definitions.py``); ``"airflow"``: the Airflow DAG ``fx_rates_ingest``
    (``orchestration/airflow/``); either served on a free 127.0.0.1 port the first time Splice
    needs it (:mod:`splice.demo.orchestration`); the build itself still loads in process.
    ``bi="superset"``: a local Superset serves the GMV dashboard over the built warehouse, read
    and annotated through ``[[bi]]`` (:mod:`splice.demo.bi`; DuckDB only).

    ``incident="stale-rates"`` switches the vendor to re-serve Friday 2026-09-25's rates on
    2026-09-28 and 2026-09-29 before anything is loaded.  ``force`` replaces a demo workspace
    already in ``directory`` (and refuses to touch a directory that is not one).  ``progress``
    receives one line per step; the tools' own output goes to ``.splice/logs/demo.log``.
    ``through`` ends the build early (the incident story builds up to Sunday 2026-09-27, then
    lets production run on: :mod:`splice.demo.story`).  ``start`` begins the history earlier
    than the quarter (a benchmark builds a year: ``bench/repair.py --since``); the SQLMesh
    models start there too.  ``bookings_scale`` loads every generated booking that many times
    (a production-sized history for benchmarks; recorded, so later loads keep it).
    """
    t0 = time.perf_counter()
    check_incident(incident)
    if warehouse not in ("duckdb", "postgres", "spark"):
        raise ConfigError(
            f"--warehouse {warehouse!r} is not one the demo builds on.",
            fix="pass --warehouse duckdb (the default), postgres or spark",
        )
    if orchestrator not in (None, "dagster", "airflow"):
        raise ConfigError(
            f"--orchestrator {orchestrator!r} is not one the demo runs its rates feed in.",
            fix="pass --orchestrator dagster or airflow, or leave it out (Splice runs the "
            "feed itself)",
        )
    if bi not in (None, "superset"):
        raise ConfigError(f"--bi {bi!r} is not a BI tool the demo serves.",
                          fix="pass --bi superset, or leave it out")  # fmt: skip
    if bi is not None and warehouse != "duckdb":
        raise ConfigError(
            f"--bi {bi} serves the demo's dashboards over its DuckDB file, not {warehouse}.",
            fix="leave out --warehouse (DuckDB), or leave out --bi",
        )
    if warehouse_url and warehouse == "duckdb":
        raise ConfigError(
            "--warehouse-url names a PostgreSQL or Spark Connect server, but the warehouse is "
            "DuckDB.",
            fix="add --warehouse postgres (or spark), or drop --warehouse-url",
        )
    if warehouse == "spark" and warehouse_url and not warehouse_url.startswith("sc://"):
        raise ConfigError(
            f"--warehouse-url {warehouse_url!r} is not a Spark Connect URL.",
            fix="pass sc://HOST:PORT, or leave it out (a local Spark in the workspace)",
        )
    from splice.demo.pg import PgTarget

    pg = PgTarget.from_url(warehouse_url) if warehouse_url and warehouse == "postgres" else None
    workspace = Path(directory).expanduser().resolve()
    _prepare_directory(workspace, force)
    log_path = workspace / LOG_FILE
    result = DemoResult(
        workspace=workspace,
        warehouse=warehouse_path(workspace),
        log_path=log_path,
        incident=incident,
        start=start,
        end=through,
    )
    execution_time = datetime.combine(through + timedelta(days=1), datetime.min.time())

    with ToolOutput(log_path) as out:

        def say(message: str) -> None:
            if progress is not None:
                with out.released():
                    progress(message)

        @contextmanager
        def step(name: str, message: str) -> Iterator[None]:
            say(message)
            out.write(f"\n===== {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} step {name}: {message}")
            s0 = time.perf_counter()
            try:
                yield
            except Exception as e:  # noqa: BLE001 - every failure becomes a SpliceError below
                out.write(f"step {name} failed: {type(e).__name__}: {e}")
                import traceback

                out.write(traceback.format_exc())
                detail = e.message if isinstance(e, SpliceError) else f"{type(e).__name__}: {e}"
                raise DemoError(
                    f"building the demo failed at step '{name}': {detail} "
                    f"(the tools' output is in {log_path}).",
                    fix=(
                        f"{e.fix}; then rebuild with --force"
                        if isinstance(e, SpliceError) and e.fix
                        else f"read {log_path}; then rebuild with --force"
                    ),  # fmt: skip
                    retry=isinstance(e, SpliceError) and e.retry,
                ) from e
            finally:
                result.steps[name] = round(time.perf_counter() - s0, 3)

        with step("workspace", f"Writing the workspace to {workspace}"):
            write_workspace(workspace, incident=incident)
            if start != Q3_START:
                _start_models_at(workspace, start)
        if warehouse == "postgres":
            from splice.demo import pg as demo_pg

            with step("postgres", _pg_message(pg)):
                if pg is None:
                    pg = demo_pg.start_local(workspace)
                elif pg.password:
                    os.environ[demo_pg.PASSWORD_ENV] = pg.password
                demo_pg.write_configs(workspace, pg)
                demo_pg.connect(workspace).close()  # reachable now, before anything is loaded
                result.warehouse = f"postgresql://{pg.user}@{pg.host}:{pg.port}/{pg.database}"
        if warehouse == "spark":
            from splice.demo import spark as demo_spark

            where = warehouse_url or "a local Spark Connect server in .splice/spark"
            with step("spark", f"Pointing the projects at Spark ({where})"):
                remote = warehouse_url or demo_spark.start_local(workspace)
                demo_spark.write_configs(workspace, remote, local=warehouse_url is None)
                with demo_spark.session(workspace) as s:  # reachable now
                    s.sql("SELECT 1").collect()
                result.warehouse = remote
        if orchestrator is not None:
            from splice.demo.orchestration import use_orchestrator

            with step(orchestrator, f"Moving the rates feed into {orchestrator} (orchestration/)"):
                result.orchestrator = use_orchestrator(workspace, system=orchestrator)
        if state_url:
            from splice.demo.pg import write_state

            write_state(workspace, state_url)
        if incident:
            say(f"Incident {incident!r} is switched on at the vendor (vendor/vendor.json)")

        with step("rates", f"Loading FX rates {start} .. {through} from the vendor (dlt)"):
            from splice.demo.ingest import ingest_fx_rates

            rates = ingest_fx_rates(workspace, start, through)
            result.counts["rate_days"] = len(rates.days_loaded)

        with step("bookings", f"Loading bookings {start} .. {through}"):
            from splice.demo.bookings import load_bookings

            result.counts["bookings"] = load_bookings(
                workspace, start, through, scale=bookings_scale
            ).rows

        with step("build", "Building pricing (SQLMesh) and finance (dbt): splice run (prod)"):
            built = _build_projects(workspace, execution_time)
            result.counts["sqlmesh_models"] = built.get("pricing", 0)
            result.counts["dbt_nodes"] = built.get("finance", 0) + built.get("checks", 0)

        with step("check", "Checking the warehouse"):
            result.counts.update(_check_warehouse(workspace, through, start))

        if bi is not None:
            from splice.demo.bi import use_superset

            with step("bi", "Serving the GMV dashboard in a local Superset (.splice/superset)"):
                result.bi = use_superset(workspace).get("dashboard_url")

        result.elapsed_seconds = round(time.perf_counter() - t0, 3)
        record = {
            "version": 1,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "workspace": str(workspace),
            "quarter": "2026-Q3",
            "start": start.isoformat(),
            "end": through.isoformat(),
            "execution_time": execution_time.isoformat(),
            "incident": incident,
            "bookings_seed": BOOKINGS_SEED,
            "bookings_scale": bookings_scale,
            "currencies": list(CURRENCIES),
            "stale_rate_days": {
                d.isoformat(): a.isoformat() for d, a in sorted(rates.stale_days.items())
            },
            "built": {
                "ingestion": ["fx_rates_ingest", "bookings_load"],
                "pricing": {"environment": "prod"},
                "finance": {"target": "prod"},
            },
            "counts": result.counts,
            "steps": result.steps,
            "elapsed_seconds": result.elapsed_seconds,
        }
        (workspace / RECORD_FILE).write_text(json.dumps(record, indent=2) + "\n")
        say(f"Built the demo in {result.elapsed_seconds:.1f} s")

    return result
