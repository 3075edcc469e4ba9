"""The undo on Apache Spark: the rows copied aside to a Parquet file on Splice's side, and put
back by overwriting exactly what they came from.

Spark has no transactions and (for its Parquet and Hive tables) no ``DELETE``, so the undo
works as Spark jobs do:

- **capture**: the rows in range are read through Spark Connect as Arrow and written to
  ``.splice/undo/<proposal>/NN_<node>.parquet``; their count and checksum (Spark's
  ``XXHASH64`` of the whole row, summed as ``DECIMAL(38,0)``:
  :func:`splice.warehouse.spark.rows.row_hash`) are computed by Spark; a count that differs
  from the rows read means the table moved during the capture, and the capture is refused (a
  retry helps).
- **restore test** (before approval): each saved file is loaded into a temporary view, typed
  as the relation was, checksummed, and written into a scratch table in the relation's own
  schema whose checksum must match too; the scratch table is dropped. Nothing the repair will
  touch is written.
- **restore**: a table partitioned by the undo's time column gets a dynamic partition overwrite
  of the saved rows (only the partitions in range are replaced; a partition in range that the
  saved rows do not have is dropped); any other table is rebuilt from a staging table holding
  its rows outside the range plus the saved rows (Spark cannot read and overwrite one table in
  one statement). Each relation is checked against its recorded checksum after its restore.
  Without transactions the relations are restored one after the other: a failure names the
  ones already restored, and the restore can be run again (it is idempotent).

An engine with table versions (Delta Lake, Iceberg) would record each table's version instead
of copying rows and restore with ``RESTORE TABLE ... TO VERSION AS OF``:
:func:`version_restore_sql` writes that statement, and
:class:`~splice.warehouse.capabilities.WarehouseCapabilities` ``undo`` says which way a
warehouse's undo works (``"copy"`` here; ``"version"`` for such an engine). This machine cannot install Delta's
jars, so that path is written, not exercised.

>>> print(version_restore_sql("spark_catalog.fx.daily_rates", 12))
RESTORE TABLE `spark_catalog`.`fx`.`daily_rates` TO VERSION AS OF 12
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from sqlglot import exp

from splice.errors import RepairError, WarehouseError
from splice.graph.relations import parse_relation
from splice.warehouse.rows import ROW, checksum_select, in_range, rows_query, table
from splice.warehouse.saved import Current, Shown, check_parquet
from splice.warehouse.spark.columns import layout

DIALECT = "spark"
SUFFIX = ".parquet"


def version_restore_sql(relation: str, version: int) -> str:
    """``RESTORE TABLE relation TO VERSION AS OF version`` (Delta Lake's time travel)."""
    target = table(relation, DIALECT).sql(dialect=DIALECT)
    return exp.Command(
        this="RESTORE", expression=f" TABLE {target} TO VERSION AS OF {int(version)}"
    ).sql(dialect=DIALECT)


def _typed(source: exp.Expr, columns: list[tuple[str, str]]) -> exp.Select:
    """``SELECT CAST(col AS type) AS col, ...`` from ``source``: the saved rows as the relation
    typed them at capture."""
    return exp.select(
        *[
            exp.cast(exp.column(c, quoted=True), exp.DataType.build(t, dialect=DIALECT)).as_(
                c, quoted=True
            )
            for c, t in columns
        ]
    ).from_(source)


def capture_one(con: Any, relation: str, time_column: str | None, start: date | None,
                end: date | None, path: Path, checksum_sql: str) -> tuple[int, str]:  # fmt: skip
    """Copy the rows in range to ``path`` (Parquet, through Arrow) and checksum them in Spark."""
    import pyarrow.parquet as pq

    query = rows_query(table(relation, DIALECT), in_range(time_column, start, end))
    arrow = con.session.sql(query.sql(dialect=DIALECT)).toArrow()
    pq.write_table(arrow, str(path))
    n, s = con.execute(checksum_sql).fetchone()
    if int(n) != arrow.num_rows:
        path.unlink(missing_ok=True)
        raise RepairError(
            f"{relation} changed while its rows were copied aside ({arrow.num_rows} rows read, "
            f"{int(n)} counted after), so the undo would not be exact.",
            fix="propose again when nothing writes the table (a retry can help)",
        )
    return int(n), f"{int(n)}:{s}"


def check_saved(path: Path, relation: str, columns: list[tuple[str, str]]) -> None:
    """Before Spark is reached: the saved file holds ``relation``'s columns."""
    check_parquet(path, relation, columns)


def load_saved(con: Any, path: Path, relation: str, columns: list[tuple[str, str]],
               index: int) -> exp.Expr:  # fmt: skip
    """The saved rows as a temporary view of this session, typed as the relation was at
    capture, aliased :data:`ROW`."""
    import pyarrow.parquet as pq

    name = f"_splice_undo_{index}"
    saved = pq.read_table(str(path))
    frame = con.session.createDataFrame(saved) if saved.num_rows else None
    if frame is None:  # no rows: an empty view of the right columns
        empty = exp.select(*[exp.cast(exp.null(), exp.DataType.build(t, dialect=DIALECT)).as_(
            c, quoted=True) for c, t in columns]).where(exp.false())  # fmt: skip
        frame = con.session.sql(empty.sql(dialect=DIALECT))
    frame.createOrReplaceTempView(name)
    typed = _typed(exp.to_table(name, quoted=True), columns)
    return exp.Subquery(this=typed, alias=exp.TableAlias(this=exp.to_identifier(ROW, quoted=True)))


def _checksum(con: Any, source: exp.Expr, where: exp.Expr | None = None) -> tuple[int, str]:
    n, s = con.execute(checksum_select(source, where, DIALECT).sql(dialect=DIALECT)).fetchone()
    return int(n), f"{int(n)}:{s}"


def _scratch(relation: str) -> exp.Table:
    rel = parse_relation(relation, dialect=DIALECT)
    return exp.table_(f"_splice_undo_test_{secrets.token_hex(4)}", db=rel.schema,
                      catalog=rel.catalog, quoted=True)  # fmt: skip


def _drop(con: Any, t: exp.Table) -> None:
    con.execute(exp.Drop(this=t, kind="TABLE", exists=True).sql(dialect=DIALECT))


def try_restore(con: Any, e: Any, source: exp.Expr) -> None:
    """Write the saved rows into a scratch table in the relation's schema and check their
    checksum there (Spark cannot roll a real restore back)."""
    scratch = _scratch(e.relation)
    cols = [exp.column(c, quoted=True) for c, _ in e.columns]
    create = exp.Create(this=scratch, kind="TABLE", expression=exp.select(*cols).from_(source),
                        properties=exp.Properties(expressions=[
                            exp.FileFormatProperty(this=exp.var("PARQUET"))]))  # fmt: skip
    try:
        con.execute(create.sql(dialect=DIALECT))
        got = _checksum(con, scratch.as_(ROW, quoted=True))
    finally:
        _drop(con, scratch)
    if got[1] != e.checksum:
        raise RepairError(
            f"the saved rows of {e.relation}, written into a table, give checksum {got[1]}, "
            f"not the recorded {e.checksum}; the undo would not restore them exactly.",
            fix="report it with splice --debug; propose again to take a new undo",
        )


def restore_one(con: Any, e: Any, source: exp.Expr, shown: Shown) -> None:
    """Put ``e``'s saved rows back (see the module): a partition overwrite when the table is
    partitioned by the undo's time column, else a rebuild through a staging table."""
    columns, partitions = layout(con, e.relation)
    if [c.lower() for c, _ in columns] != [c.lower() for c, _ in e.columns]:
        raise RepairError(
            f"{e.relation} changed shape since the undo was taken (columns then: "
            f"{', '.join(c for c, _ in e.columns)}; now: {', '.join(c for c, _ in columns)}), "
            "so the saved rows cannot be put back.",
            fix="restore by hand from " + shown(e),
        )
    target = table(e.relation, DIALECT)
    cols: list[exp.Expr] = [exp.column(c, quoted=True) for c, _ in e.columns]
    where = in_range(e.time_column, e.start, e.end)
    by_time = len(partitions) == 1 and partitions[0].lower() == str(e.time_column).lower()
    if where is not None and by_time:
        _overwrite_partitions(con, e, target, cols, source, where)
        return
    stage = _scratch(e.relation)
    keep = exp.select(*cols).from_(target)
    if where is not None:  # the rows outside the range stay (a NULL time is outside it)
        keep = keep.where(exp.Is(this=exp.Paren(this=where), expression=exp.false()).or_(
            exp.Is(this=exp.Paren(this=where), expression=exp.null())))  # fmt: skip
        rows: exp.Expr = exp.union(keep, exp.select(*cols).from_(source), distinct=False)
    else:
        rows = exp.select(*cols).from_(source)
    create = exp.Create(this=stage, kind="TABLE", expression=rows,
                        properties=exp.Properties(expressions=[
                            exp.FileFormatProperty(this=exp.var("PARQUET"))]))  # fmt: skip
    try:
        con.execute(create.sql(dialect=DIALECT))
        insert = exp.Insert(this=target, expression=exp.select(*cols).from_(stage), overwrite=True)
        with _overwrite_mode(con, "STATIC"):  # the whole table
            con.execute(insert.sql(dialect=DIALECT))
    finally:
        _drop(con, stage)


@contextmanager
def _overwrite_mode(con: Any, mode: str) -> Iterator[None]:
    """``spark.sql.sources.partitionOverwriteMode`` = ``mode`` for the block, then as it was
    (the session may be the run's, shared with the tools)."""
    key = "spark.sql.sources.partitionOverwriteMode"
    before = con.session.conf.get(key, None)
    con.session.conf.set(key, mode)
    try:
        yield
    finally:
        if before is None:
            con.session.conf.unset(key)
        else:
            con.session.conf.set(key, before)


def _overwrite_partitions(con: Any, e: Any, target: exp.Expr, cols: list[exp.Expr],
                          source: exp.Expr, where: exp.Expr) -> None:  # fmt: skip
    """Replace the partitions in range with the saved rows; drop those the saved rows lack."""
    time_col = exp.column(str(e.time_column), quoted=True)
    saved_days = {r[0] for r in con.execute(exp.select(time_col).distinct().from_(source)
                                             .sql(dialect=DIALECT)).fetchall()}  # fmt: skip
    now_days = {r[0] for r in con.execute(exp.select(time_col).distinct().from_(target)
                                           .where(where).sql(dialect=DIALECT)).fetchall()}  # fmt: skip
    if saved_days:
        insert = exp.Insert(this=target, expression=exp.select(*cols).from_(source),
                            overwrite=True)  # fmt: skip
        with _overwrite_mode(con, "DYNAMIC"):  # only the partitions the saved rows have
            con.execute(insert.sql(dialect=DIALECT))
    for day in sorted(d for d in now_days - saved_days if d is not None):
        spec = exp.Partition(expressions=[exp.EQ(this=exp.to_identifier(str(e.time_column)),
                                                 expression=exp.Literal.string(str(day)))])  # fmt: skip
        drop = exp.Alter(this=target, kind="TABLE",
                         actions=[exp.DropPartition(expressions=[spec], exists=True)])  # fmt: skip
        con.execute(drop.sql(dialect=DIALECT))


def put_back(con: Any, entries: list[Any], load: Callable[[], list[exp.Expr]], current: Current,
             *, keep: bool, shown: Shown) -> list[str]:  # fmt: skip
    """Test (``keep=False``) or do the restore of every entry, relation after relation (Spark
    has no transactions); ``load()`` gives the saved rows, checked; ``current(con, e)`` is the
    relation's checksum in range now; ``shown(e)`` where its saved rows are. Returns the
    checksums after (the recorded ones for a test).
    """
    saved = load()
    if not keep:
        for e, source in zip(entries, saved, strict=True):
            try_restore(con, e, source)
        return [e.checksum for e in entries]
    after: list[str] = []
    done: list[str] = []
    for e, source in zip(entries, saved, strict=True):
        try:
            restore_one(con, e, source, shown)
            got = current(con, e)
        except WarehouseError as err:
            raise RepairError(
                f"restoring {e.relation} failed: {err.message}"
                + (f" (already restored: {', '.join(done)})" if done else " (nothing restored)"),
                fix="run splice undo again once Spark answers: a restore is idempotent",
            ) from None
        if got[1] != e.checksum:
            raise RepairError(
                f"restoring {e.relation} gives checksum {got[1]}, not the recorded {e.checksum}"
                + (f" (already restored: {', '.join(done)})" if done else ""),
                fix="report it with splice --debug; the saved rows are in " + shown(e),
            )
        done.append(e.relation)
        after.append(got[1])
        con.execute(exp.Refresh(this=table(e.relation, DIALECT), kind="TABLE").sql(dialect=DIALECT))
    return after
