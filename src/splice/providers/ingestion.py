"""Ingestion jobs (dlt pipelines, shell commands, orchestrator jobs) as graph nodes.

A job writes raw relations; a dlt pipeline's tables can be read from its own stored schema, so
``writes`` may be left out of splice.toml for a pipeline that has run once. A Dagster job's
relations can be read from its asset keys (``["raw", "fx_rates"]`` is ``raw.fx_rates``), an
Airflow DAG's from the assets its tasks produce: read once from the webserver and kept in
``.splice/orchestrators/NAME.json``.
"""

from __future__ import annotations

from pathlib import Path

from splice.config.workspace import IngestionSection
from splice.errors import ConfigError
from splice.graph.model import Node, Relation
from splice.graph.relations import parse_relation, relation_from_parts

PROJECT = "ingestion"


def dlt_tables(
    pipeline_name: str, pipelines_dir: Path, dialect: str, catalog: str | None
) -> tuple[str | None, dict[Relation, dict[str, str]], dict[str, object]]:
    """Tables a dlt pipeline writes, read from its local state (no warehouse connection).

    Returns (dataset, {relation: {column: type}}, facts) or (None, {}, {}) when it never ran.
    """
    if not (pipelines_dir / pipeline_name).is_dir():
        return None, {}, {}
    import dlt

    try:
        pipe = dlt.attach(pipeline_name=pipeline_name, pipelines_dir=str(pipelines_dir))
    except Exception:  # noqa: BLE001 - a pipeline that never completed has no usable state
        return None, {}, {}
    dataset = pipe.dataset_name
    out: dict[Relation, dict[str, str]] = {}
    facts: dict[str, object] = {"destination": getattr(pipe.destination, "destination_name", None)}
    try:
        schema = pipe.default_schema
    except Exception:  # noqa: BLE001
        return dataset, {}, facts
    for table in schema.data_tables():
        tname = table["name"]
        cols = {c: str(spec.get("data_type", "")) for c, spec in table.get("columns", {}).items()}
        out[relation_from_parts(catalog, dataset or None, str(tname), dialect=dialect)] = cols
    facts["last_trace"] = None
    return dataset, out, facts


def orchestrated_writes(job: IngestionSection, root: Path) -> tuple[list[str], str | None]:
    """The relations an orchestrated job's assets name (kept from the last read), or why not.

    Never starts a local orchestrator: the graph loads without one; the assets are read when
    the webserver answers and kept, so later loads need no network."""
    import json

    from splice.errors import OrchestratorError
    from splice.orchestrators import for_job

    cfg = job.orchestrator
    assert cfg is not None
    kept = root / ".splice" / "orchestrators" / f"{job.name}.json"
    if kept.is_file():
        try:
            return list(json.loads(kept.read_text())["writes"]), None
        except (ValueError, KeyError, OSError):
            pass
    system = "dagster" if job.dagster is not None else "airflow"
    quiet = job.model_copy(update={system: cfg.model_copy(update={"local": None})})
    orch = for_job(quiet, root)
    assert orch is not None
    try:
        writes = orch.asset_relations()
    except OrchestratorError as e:
        return [], e.message
    if writes:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps({"writes": writes, "url": cfg.url}))
    return writes, None if writes else f"{system} job {orch.job!r} names no assets it writes"


def ingestion_nodes(
    jobs: list[IngestionSection], root: Path, *, dialect: str, default_catalog: str | None
) -> list[Node]:
    nodes: list[Node] = []
    for i, job in enumerate(jobs):
        writes: list[Relation] = []
        columns: dict[str, str] = {}
        facts: dict[str, object] = {}
        for w in job.writes:
            try:
                writes.append(parse_relation(w, dialect=dialect, default_catalog=default_catalog))
            except Exception as e:  # noqa: BLE001
                raise ConfigError(
                    f"splice.toml: ingestion[{i}].writes: {w!r} is not a relation name ({e}).",
                    fix="write schema.table or catalog.schema.table",
                ) from None
        meta: dict[str, object] = {}
        if job.orchestrated:
            from splice.orchestrators import for_job

            orch = for_job(job, root)
            assert orch is not None
            meta["orchestrator"] = {"system": orch.system, "url": orch.cfg.url, "job": orch.job,
                                    "days": orch.cfg.days, "link": orch.job_link()}  # fmt: skip
            if not writes:
                found, why = orchestrated_writes(job, root)
                for w in found:
                    writes.append(
                        parse_relation(w, dialect=dialect, default_catalog=default_catalog)
                    )
                if why:
                    meta["writes_unknown"] = why
        if job.runner != "command" and job.pipeline_name:
            pdir = root / (job.pipelines_dir or ".dlt/pipelines")
            _dataset, tables, facts = dlt_tables(job.pipeline_name, pdir, dialect, default_catalog)
            for rel, cols in sorted(tables.items()):
                if rel not in writes:
                    writes.append(rel)
                if len(tables) == 1 or rel == (writes[0] if writes else None):
                    columns = cols
        nodes.append(
            Node(
                id=f"{PROJECT}:{job.name}",
                project=PROJECT,
                name=job.name,
                kind="ingestion",
                tool=job.runner,
                writes=writes[0] if writes else None,
                also_writes=writes[1:],
                columns=columns,
                language="none",
                owner=job.owner,
                description=job.description,
                meta={
                    "runner": job.runner,
                    "command": job.command,
                    "reads": job.reads,
                    **facts,
                    **meta,
                },
            )
        )
    return nodes
