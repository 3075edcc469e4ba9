"""The demo on Apache Spark (``splice demo DIR --warehouse spark``): the same workspace, its
projects pointed at one Spark Connect server.

- ``splice.toml``: ``[warehouse] type = "spark"``, ``remote = "sc://127.0.0.1:PORT"`` and, for
  a server Splice starts itself, ``local = ".splice/spark"`` (a Spark Connect server from
  pyspark, its Hive metastore and tables under that directory; a later command that needs it
  starts it again; ``splice.demo.spark.stop_local`` stops it).
- pricing (SQLMesh): a Spark gateway (``spark.remote``), its state in a DuckDB file beside the
  project (``state_connection``); the models stay written in DuckDB's dialect, SQLMesh
  transpiles them.
- finance (dbt): dbt-spark's ``session`` method, a Spark Connect client of the same server.
- the rates feed: dlt has no Spark destination, so on Spark ``fx_rates_ingest`` is a command job
  that writes ``raw.fx_rates`` through Spark itself: a Parquet table partitioned by
  ``rate_date``, each loaded day's partition overwritten (the same replace-the-day semantics
  as dlt's merge), every row stamped with ``_load_id`` and ``_loaded_at``.
- the bookings: ``raw.bookings``, partitioned by ``booking_date``, written the same way.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any

from sqlglot import exp

from splice.demo.layout import CONFIG_FILE, FINANCE_DIR, PRICING_DIR, DemoError

CATALOG = "spark_catalog"
LOCAL_DIR = ".splice/spark"
DIALECT = "spark"

#: raw.fx_rates on Spark: the partition column last, as Spark stores it
FX_COLUMNS = (("currency", "STRING"), ("rate_to_usd", "DOUBLE"), ("as_of", "DATE"),
              ("_load_id", "STRING"), ("_loaded_at", "TIMESTAMP"), ("rate_date", "DATE"))  # fmt: skip
BOOKING_COLUMNS = (("booking_id", "STRING"), ("booked_at", "TIMESTAMP"), ("currency", "STRING"),
                   ("amount", "DOUBLE"), ("channel", "STRING"), ("_load_id", "STRING"),
                   ("_loaded_at", "TIMESTAMP"), ("booking_date", "DATE"))  # fmt: skip


def remote_of(workspace: Path) -> str | None:
    """The Spark Connect URL of a demo workspace on Spark; None for another warehouse."""
    cfg = Path(workspace) / CONFIG_FILE
    if not cfg.exists():
        return None
    wh = tomllib.loads(cfg.read_text()).get("warehouse") or {}
    return str(wh["remote"]) if wh.get("type") == "spark" and wh.get("remote") else None


def _local_dir(workspace: Path) -> str | None:
    wh = tomllib.loads((Path(workspace) / CONFIG_FILE).read_text()).get("warehouse") or {}
    return str(wh["local"]) if wh.get("local") else None


def ensure_local(workspace: Path) -> None:
    """Start the workspace's own Spark Connect server (``[warehouse] local``) when it is down."""
    from splice.api import ensure_local_server, workspace_config

    wh = workspace_config(workspace).warehouse
    if wh.type == "spark" and wh.local:
        ensure_local_server(workspace, wh)


def start_local(workspace: Path) -> str:
    """A new Spark Connect server for the workspace (``.splice/spark``); its remote URL."""
    from splice.api import LocalSpark

    server = LocalSpark(Path(workspace) / LOCAL_DIR).start()
    return server.remote


def stop_local(workspace: Path) -> bool:
    """Stop the workspace's own Spark Connect server, if it has one running."""
    from splice.api import LocalSpark, stop_spark_sessions

    remote, local = remote_of(workspace), _local_dir(workspace)
    if not remote or not local:
        return False
    stop_spark_sessions()
    return LocalSpark.stop_at(Path(workspace) / local, remote)


@contextmanager
def session(workspace: Path) -> Iterator[Any]:
    """A Spark Connect session to the workspace's server (started first when it is local)."""
    remote = remote_of(workspace)
    if remote is None:
        raise DemoError(f"{workspace} is not a demo workspace on Spark.")
    ensure_local(workspace)
    from pyspark.sql import SparkSession

    s = SparkSession.builder.remote(remote).create()
    try:
        yield s
    finally:
        s.stop()


# -- the tools' configs ----------------------------------------------------------------------
def _warehouse_toml(remote: str, local: bool) -> str:
    lines = [
        "[warehouse]",
        "type = \"spark\"   # each project's own config (dbt-spark, SQLMesh's gateway) names it",
        f'remote = "{remote}"',
    ]
    if local:
        lines.append(f'local = "{LOCAL_DIR}"   # a server Splice starts itself (in the workspace)')
    return "\n".join(lines) + "\n"


def _profiles(remote: str) -> str:
    def output(name: str, schema: str) -> str:
        return (
            f"    {name}:\n"
            "      type: spark\n"
            "      method: session\n"
            "      host: NA\n"
            f"      schema: {schema}\n"
            "      threads: 1\n"
            "      server_side_parameters:\n"
            f"        spark.remote: {json.dumps(remote)}\n"
        )

    return (
        "# The finance project on Spark: dbt-spark in process, a Spark Connect client.\n"
        "finance:\n  target: prod\n  outputs:\n"
        + output("prod", "finance")
        + output("dev", "finance_dev")
        + output("review", "finance_review")
    )


def _sqlmesh_config(text: str, remote: str) -> str:
    text = text.replace(
        "    DuckDBConnectionConfig,\n",
        "    DuckDBConnectionConfig,\n    SparkConnectionConfig,\n",
    ).replace(
        'WAREHOUSE = Path(__file__).resolve().parent.parent / "warehouse.duckdb"\n',
        '# SQLMesh\'s own state: a small DuckDB file beside the project\nSTATE = Path(__file__).resolve().parent / "state.duckdb"\n',
    )
    gateway = (
        f'GatewayConfig(connection=SparkConnectionConfig(config={{"spark.remote": {remote!r}}}), '
        "state_connection=DuckDBConnectionConfig(database=str(STATE)))"
    )
    text, n = re.subn(
        r"GatewayConfig\(connection=DuckDBConnectionConfig\(database=str\(WAREHOUSE\)\)\)",
        lambda _: gateway,
        text,
    )
    if n != 1:
        raise DemoError(f"{PRICING_DIR}/config.py: no DuckDB gateway to point at Spark.")
    return text


def _fx_job_toml(text: str) -> str:
    """``fx_rates_ingest`` as a command job (dlt cannot write to Spark)."""
    text, n = re.subn(
        r'runner = "dlt"\ndescription = "([^"]*)"\npipeline_name = [^\n]*\npipelines_dir = [^\n]*\n'
        r"dataset = [^\n]*\n",
        lambda m: (
            'runner = "command"\ndescription = "Daily ECB reference rates from the rates '
            "vendor, in USD per unit (written by Spark: each loaded day's partition replaced).\"\n"
        ),
        text,
    )
    if n != 1:
        raise DemoError(f"{CONFIG_FILE}: no dlt job fx_rates_ingest to turn into a Spark job.")
    return text


def write_configs(workspace: Path, remote: str, *, local: bool) -> None:
    """Point a freshly written demo workspace at Spark (see the module)."""
    ws = Path(workspace)
    cfg = ws / CONFIG_FILE
    text = cfg.read_text()
    text, n = re.subn(r"\[warehouse\]\n(?:[^\[\n][^\n]*\n)*", _warehouse_toml(remote, local) + "\n",
                      text)  # fmt: skip
    if n != 1:
        raise DemoError(f"{cfg}: no [warehouse] section to point at Spark.")
    cfg.write_text(_fx_job_toml(text))
    (ws / FINANCE_DIR / "profiles.yml").write_text(_profiles(remote))
    config_py = ws / PRICING_DIR / "config.py"
    config_py.write_text(_sqlmesh_config(config_py.read_text(), remote))
    externals = ws / PRICING_DIR / "external_models.yaml"
    text = externals.read_text().replace('"warehouse".', f'"{CATALOG}".')
    text = text.replace("    _dlt_load_id: TEXT\n    _dlt_id: TEXT\n",
                        "    _load_id: TEXT\n    _loaded_at: TIMESTAMP\n")  # fmt: skip
    externals.write_text(text)
    project = ws / FINANCE_DIR / "dbt_project.yml"  # Spark's text type is STRING
    project.write_text(re.sub(r"^( {8}\w+): varchar$", r"\1: string", project.read_text(),
                              flags=re.M))  # fmt: skip
    sources = ws / FINANCE_DIR / "models" / "sources.yml"  # dbt-spark: a schema, no database
    sources.write_text(re.sub(r"\n *database: warehouse\n", "\n", sources.read_text()))


# -- writing the raw tables ------------------------------------------------------------------
def _create(s: Any, table: str, columns: tuple[tuple[str, str], ...]) -> None:
    schema_name, name = table.split(".")
    s.sql(exp.Create(this=exp.to_identifier(schema_name), kind="SCHEMA", exists=True)
          .sql(dialect=DIALECT)).collect()  # fmt: skip
    part = columns[-1][0]
    schema = exp.Schema(
        this=exp.table_(name, db=schema_name),
        expressions=[exp.ColumnDef(this=exp.to_identifier(c), kind=exp.DataType.build(t))
                     for c, t in columns],
    )  # fmt: skip
    props = exp.Properties(expressions=[
        exp.FileFormatProperty(this=exp.var("PARQUET")),
        exp.PartitionedByProperty(this=exp.Schema(expressions=[exp.to_identifier(part)])),
    ])  # fmt: skip
    s.sql(exp.Create(this=schema, kind="TABLE", exists=True, properties=props)
          .sql(dialect=DIALECT)).collect()  # fmt: skip


def _write(s: Any, table: str, columns: tuple[tuple[str, str], ...], frame: Any,
           *, append: bool, copies: int = 1, id_column: str | None = None) -> None:  # fmt: skip
    """Write ``frame``'s rows: replacing the partitions they fall in, or appended."""
    _create(s, table, columns)
    view = "_splice_demo_rows"
    s.createDataFrame(frame).createOrReplaceTempView(view)
    src = exp.to_table(view)
    cols: list[exp.Expr] = []
    for c, t in columns:
        col: exp.Expr = exp.column(c)
        if c == id_column and copies > 1:  # copy k > 1 gets the id suffix ".k"
            k = exp.column("k", table="copies")
            col = exp.If(this=k.eq(1), true=col,
                         false=exp.func("CONCAT", col, exp.Literal.string("."),
                                        exp.cast(k, exp.DataType.build("STRING"))))  # fmt: skip
        cols.append(exp.cast(col, exp.DataType.build(t)).as_(c))
    q = exp.select(*cols).from_(src)
    if copies > 1:
        q = q.join(exp.Table(this=exp.func("RANGE", exp.Literal.number(1),
                                           exp.Literal.number(copies + 1)),
                             alias=exp.TableAlias(this=exp.to_identifier("copies"),
                                                  columns=[exp.to_identifier("k")])),
                   join_type="CROSS")  # fmt: skip
    insert = exp.Insert(this=exp.to_table(table), expression=q, overwrite=not append)
    if not append:  # only the partitions the rows fall in
        s.conf.set("spark.sql.sources.partitionOverwriteMode", "DYNAMIC")
    s.sql(insert.sql(dialect=DIALECT)).collect()


def write_rates(workspace: Path, rows: list[dict[str, Any]], load_id: str,
                loaded_at: datetime) -> None:  # fmt: skip
    """The vendor's rows into ``raw.fx_rates``: each loaded day's partition replaced."""
    import pandas as pd

    if not rows:
        return
    frame = pd.DataFrame(rows).assign(_load_id=load_id, _loaded_at=loaded_at)
    with session(workspace) as s:
        _write(s, "raw.fx_rates", FX_COLUMNS, frame, append=False)


def write_bookings(workspace: Path, frame: Any, load_id: str, loaded_at: datetime, *,
                   start: date, end: date, append: bool, copies: int) -> None:  # fmt: skip
    """Bookings into ``raw.bookings``: the days of ``start .. end`` replaced (or appended)."""
    frame = frame.assign(_load_id=load_id, _loaded_at=loaded_at)
    with session(workspace) as s:
        _write(s, "raw.bookings", BOOKING_COLUMNS, frame, append=append, copies=copies,
               id_column="booking_id")  # fmt: skip
