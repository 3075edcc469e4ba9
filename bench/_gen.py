"""A deterministic federated workspace for benchmarks: one SQLMesh project, one dbt project.

``generate_federated_workspace(dir)`` writes

- ``sqlmesh_proj/``: ``config.yaml``, ``external_models.yaml`` (the raw tables, with types) and
  ``n_sqlmesh`` SQL models in schemas ``sm_stg``, ``sm_int`` and ``sm_marts`` (a few of them
  INCREMENTAL_BY_TIME_RANGE on ``event_date``);
- ``dbt_proj/``: ``dbt_project.yml``, ``profiles.yml``, ``models/sources.yml`` (dbt sources that
  point at the SQLMesh models as ``warehouse.<schema>.<table>``) and ``n_dbt`` models in
  ``models/{staging,intermediate,marts}`` that need no Jinja but ``{{ ref() }}`` / ``{{ source() }}``,
  each documented in a ``_models.yml`` with column types;
- ``splice.toml`` naming both projects and the warehouse ``warehouse.duckdb``.

Every model has 20 columns (5 keys, 15 DOUBLE measures) and is one of six shapes: staging
(CTEs, CASE, COALESCE), join (CTEs, LEFT JOIN), aggregate (GROUP BY, HAVING), window (window
functions, QUALIFY), union (UNION ALL), lookup (scalar subquery, EXISTS).  The same seed gives the
same bytes.  Nothing is built: the warehouse file does not exist until a tool runs.

>>> import tempfile
>>> ws = generate_federated_workspace(tempfile.mkdtemp(), n_dbt=6, n_sqlmesh=4)
>>> len(ws.models), sorted({m.tool for m in ws.models})
(10, ['dbt', 'sqlmesh'])
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

CATALOG = "warehouse"
DBT_SCHEMA = "analytics"
KEYS = {
    "id": "BIGINT",
    "customer_id": "BIGINT",
    "product_id": "BIGINT",
    "region": "VARCHAR",
    "event_date": "DATE",
}
MEASURES = [f"m{i:02d}" for i in range(1, 16)]
COLUMNS = {**KEYS, **{m: "DOUBLE" for m in MEASURES}}
SHAPES = ("staging", "join", "aggregate", "window", "union", "lookup")


@dataclass
class GenModel:
    """One generated model.  ``inputs`` are ``(tool_reference, relation_key)`` pairs."""

    name: str  # the tool's name: sm_int.m_0042 (SQLMesh) or int_0042 (dbt)
    tool: str  # dbt or sqlmesh
    relation: str  # warehouse.<schema>.<table>
    shape: str
    path: str  # relative to the workspace root
    inputs: list[str] = field(default_factory=list)  # relation keys read
    columns: dict[str, str] = field(default_factory=lambda: dict(COLUMNS))


@dataclass
class GeneratedWorkspace:
    root: Path
    models: list[GenModel]
    raw: dict[str, dict[str, str]]  # relation key -> columns, for the external raw tables
    _by_relation: dict[str, GenModel] = field(default_factory=dict, repr=False)

    def columns_of(self, relation: str) -> dict[str, str]:
        """Columns and types of a raw table or of a generated model's relation."""
        if relation in self.raw:
            return self.raw[relation]
        if not self._by_relation:
            self._by_relation.update((m.relation, m) for m in self.models)
        return self._by_relation[relation].columns


# -- SQL shapes ------------------------------------------------------------------------------
# Each takes the SQL text of its inputs (a table reference each) and returns a SELECT with the
# 20 standard columns.


def _staging(rng: random.Random, ins: list[str]) -> str:
    exprs = []
    for i, m in enumerate(MEASURES):
        r = (i + rng.randrange(7)) % 6
        exprs.append(
            [
                f"{m} * {rng.randint(2, 9)}.{rng.randint(0, 9)} AS {m}",
                f"COALESCE({m}, 0) AS {m}",
                f"CASE WHEN {m} > {rng.randint(0, 50)} THEN {m} ELSE NULL END AS {m}",
                f"ROUND({m}, 2) AS {m}",
                f"CAST({m} AS DOUBLE) AS {m}",
                f"ABS({m} - {rng.randint(1, 99)}) AS {m}",
            ][r]
        )
    body = ",\n        ".join(exprs)
    return (
        f"WITH source AS (\n    SELECT * FROM {ins[0]}\n),\n"
        f"renamed AS (\n    SELECT\n        id,\n        customer_id,\n        product_id,\n"
        f"        LOWER(region) AS region,\n        event_date,\n        {body}\n"
        f"    FROM source\n    WHERE id IS NOT NULL\n)\nSELECT * FROM renamed"
    )


def _join(rng: random.Random, ins: list[str]) -> str:
    split = rng.randint(5, 10)
    left, right = MEASURES[:split], MEASURES[split:]
    a_cols = ", ".join(list(KEYS) + left)
    b_cols = ", ".join(["id"] + right)
    outs = list(KEYS)
    sel = [f"a.{k}" for k in KEYS]
    for i, m in enumerate(left):
        sel.append(
            f"a.{m} + COALESCE(b.{right[i % len(right)]}, 0) AS {m}" if i % 3 == 0 else f"a.{m}"
        )
    for m in right:
        sel.append(f"COALESCE(b.{m}, a.{left[0]}) AS {m}" if rng.random() < 0.3 else f"b.{m}")
    outs += MEASURES
    third = ""
    if len(ins) > 2:
        third = (
            f"\nLEFT JOIN {ins[2]} AS c ON a.customer_id = c.customer_id AND c.region = a.region"
        )
        sel[5] = f"a.{left[0]} * COALESCE(c.m15, 1) AS {left[0]}"
    cols = ",\n    ".join(sel)
    return (
        f"WITH a AS (\n    SELECT {a_cols}\n    FROM {ins[0]}\n"
        f"    WHERE event_date >= DATE '2024-0{rng.randint(1, 9)}-01'\n),\n"
        f"b AS (\n    SELECT {b_cols}\n    FROM {ins[1]}\n)\n"
        f"SELECT\n    {cols}\nFROM a\nLEFT JOIN b ON a.id = b.id{third}"
    )


def _aggregate(rng: random.Random, ins: list[str]) -> str:
    funcs = ["SUM", "AVG", "MAX", "MIN", "SUM"]
    aggs = []
    for i, m in enumerate(MEASURES):
        if i == 14:
            aggs.append(f"CAST(COUNT(*) AS DOUBLE) AS {m}")
        elif i == 13:
            aggs.append(f"SUM(CASE WHEN m01 > 0 THEN {m} ELSE 0 END) AS {m}")
        else:
            aggs.append(f"{funcs[(i + rng.randrange(5)) % 5]}({m}) AS {m}")
    body = ",\n        ".join(aggs)
    return (
        f"WITH base AS (\n    SELECT * FROM {ins[0]}\n),\n"
        f"agg AS (\n    SELECT\n        MIN(id) AS id,\n        customer_id,\n        product_id,\n"
        f"        region,\n        event_date,\n        {body}\n    FROM base\n"
        f"    GROUP BY customer_id, product_id, region, event_date\n"
        f"    HAVING SUM(m01) > {rng.randint(0, 10)}\n)\n"
        f"SELECT {', '.join(COLUMNS)}\nFROM agg"
    )


def _window(rng: random.Random, ins: list[str]) -> str:
    # every window orders by all columns after its own key: ties broken the same way in every
    # run, so two builds of the same inputs give the same rows (the run benchmark compares them)
    ties = ", ".join(COLUMNS)
    sel = list(KEYS)
    for i, m in enumerate(MEASURES):
        r = (i + rng.randrange(5)) % 5
        sel.append(
            [
                f"SUM({m}) OVER (PARTITION BY customer_id ORDER BY event_date, {ties} "
                f"ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS {m}",
                f"LAG({m}) OVER (PARTITION BY customer_id ORDER BY event_date, {ties}) AS {m}",
                f"AVG({m}) OVER (PARTITION BY region) AS {m}",
                f"CAST(ROW_NUMBER() OVER (PARTITION BY product_id ORDER BY {m} DESC, {ties}) AS DOUBLE) "
                f"AS {m}",
                m,
            ][r]
        )
    cols = ",\n    ".join(sel)
    return (
        f"SELECT\n    {cols}\nFROM {ins[0]}\n"
        f"QUALIFY ROW_NUMBER() OVER (PARTITION BY id ORDER BY event_date DESC, {ties}) = 1"
    )


def _union(rng: random.Random, ins: list[str]) -> str:
    parts = []
    for j, src in enumerate(ins[:3]):
        sel = list(KEYS) + [
            m if (i + j) % 4 else f"{m} * {j + 1} AS {m}" for i, m in enumerate(MEASURES)
        ]
        parts.append(f"SELECT {', '.join(sel)}\nFROM {src}\nWHERE region <> 'r{j}'")
    return "\nUNION ALL\n".join(parts)


def _lookup(rng: random.Random, ins: list[str]) -> str:
    sel = [f"t.{k}" for k in KEYS]
    for i, m in enumerate(MEASURES):
        sel.append(f"t.{m}" if i % 5 else f"t.{m} / NULLIF(t.m15, 0) AS {m}")
    sel[6] = f"(SELECT MAX(l.m02) FROM {ins[1]} AS l WHERE l.customer_id = t.customer_id) AS m02"
    cols = ",\n    ".join(sel)
    return (
        f"SELECT\n    {cols}\nFROM {ins[0]} AS t\n"
        f"WHERE EXISTS (SELECT 1 FROM {ins[1]} AS e WHERE e.product_id = t.product_id)"
    )


_BUILDERS = {
    "staging": _staging,
    "join": _join,
    "aggregate": _aggregate,
    "window": _window,
    "union": _union,
    "lookup": _lookup,
}
_N_INPUTS = {"staging": 1, "join": 2, "aggregate": 1, "window": 1, "union": 2, "lookup": 2}


def _pick(rng: random.Random, pool: list, n: int, recent: int = 60) -> list:
    """``n`` distinct inputs, biased towards the most recent part of ``pool``."""
    n = min(n, len(pool))
    window = pool[-recent:] if len(pool) > recent and rng.random() < 0.7 else pool
    return rng.sample(window, n) if len(window) >= n else rng.sample(pool, n)


def generate_federated_workspace(
    dir: str | Path,  # noqa: A002 - the brief's name
    n_dbt: int = 1500,
    n_sqlmesh: int = 500,
    seed: int = 0,
    n_raw: int = 20,
) -> GeneratedWorkspace:
    """Write the workspace under ``dir`` (created) and describe what was written."""
    root = Path(dir)
    rng = random.Random(seed)
    sm_dir, dbt_dir = root / "sqlmesh_proj", root / "dbt_proj"
    for d in (sm_dir / "models", dbt_dir / "models"):
        d.mkdir(parents=True, exist_ok=True)
    models: list[GenModel] = []

    raw = {f"{CATALOG}.raw.src_{i:02d}": dict(COLUMNS) for i in range(1, n_raw + 1)}

    # SQLMesh: staging on raw, then intermediate and marts on earlier SQLMesh models.
    n_stg = max(1, n_sqlmesh // 5)
    n_marts = max(1, n_sqlmesh * 3 // 10) if n_sqlmesh > 2 else 0
    sm_rels: list[str] = []
    for i in range(n_sqlmesh):
        if i < n_stg:
            schema, shape, ins = "sm_stg", "staging", [rng.choice(sorted(raw))]
        else:
            schema = "sm_marts" if i >= n_sqlmesh - n_marts else "sm_int"
            shape = rng.choice(SHAPES[1:]) if rng.random() < 0.8 else "staging"
            ins = _pick(
                rng, sm_rels, _N_INPUTS[shape] + (rng.random() < 0.3 and shape in ("join", "union"))
            )
            if len(ins) < _N_INPUTS[shape]:
                shape, ins = "staging", ins[:1]
        table = f"m_{i:04d}"
        name = f"{schema}.{table}"
        incremental = shape in ("staging", "join", "union") and rng.random() < 0.25
        sql = _BUILDERS[shape](rng, [_sm_ref(r) for r in ins])
        if incremental:
            sql = _add_time_filter(sql, shape)
        kind = (
            "INCREMENTAL_BY_TIME_RANGE (\n    time_column event_date\n  )"
            if incremental
            else rng.choice(["FULL", "FULL", "VIEW"])
        )
        header = f"MODEL (\n  name {name},\n  kind {kind},\n  cron '@daily',\n  grain id\n);\n\n"
        path = Path("sqlmesh_proj/models") / schema / f"{table}.sql"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(header + sql + ";\n")
        rel = f"{CATALOG}.{name}"
        sm_rels.append(rel)
        models.append(GenModel(name, "sqlmesh", rel, shape, str(path), ins))

    # dbt: staging on SQLMesh models (through sources), then intermediate and marts on refs.
    sources_used: dict[str, set[str]] = {}
    sm_late = [r for r in sm_rels if ".sm_marts." in r or ".sm_int." in r] or sm_rels
    dbt_names: list[str] = []
    dbt_ref_of: dict[str, str] = {}
    n_dstg = max(1, n_dbt // 5)
    n_dmarts = max(1, n_dbt // 3) if n_dbt > 2 else 0
    for i in range(n_dbt):
        if i < n_dstg or not dbt_names:
            layer, prefix, shape = "staging", "stg", "staging"
            ins = [rng.choice(sm_late)] if sm_late else [rng.choice(sorted(raw))]
        else:
            layer, prefix = ("marts", "fct") if i >= n_dbt - n_dmarts else ("intermediate", "int")
            shape = rng.choice(SHAPES[1:]) if rng.random() < 0.85 else "staging"
            pool = [f"{CATALOG}.{DBT_SCHEMA}.{n}" for n in dbt_names]
            ins = _pick(
                rng, pool, _N_INPUTS[shape] + (rng.random() < 0.3 and shape in ("join", "union"))
            )
            if rng.random() < 0.1 and sm_late and len(ins) > 1:
                ins[-1] = rng.choice(sm_late)  # some later models read SQLMesh directly too
            if len(ins) < _N_INPUTS[shape]:
                shape, ins = "staging", ins[:1]
        name = f"{prefix}_{i:04d}"
        refs = []
        for r in ins:
            if r in dbt_ref_of:
                refs.append("{{ ref('" + dbt_ref_of[r] + "') }}")
            else:
                _cat, sch, tab = r.split(".")
                src = sch if not sch.startswith("raw") else "raw"
                sources_used.setdefault(src, set()).add(tab)
                refs.append("{{ source('" + src + "', '" + tab + "') }}")
        sql = _BUILDERS[shape](rng, refs)
        path = Path("dbt_proj/models") / layer / f"{name}.sql"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(sql + "\n")
        rel = f"{CATALOG}.{DBT_SCHEMA}.{name}"
        dbt_names.append(name)
        dbt_ref_of[rel] = name
        models.append(GenModel(name, "dbt", rel, shape, str(path), ins))

    _write_sqlmesh_project(sm_dir, raw)
    _write_dbt_project(dbt_dir, sources_used, [m for m in models if m.tool == "dbt"])
    (root / "splice.toml").write_text(
        textwrap.dedent(
            """\
            # Generated by bench/_gen.py: a federated benchmark workspace.
            [workspace]
            name = "bench"

            [warehouse]
            path = "warehouse.duckdb"

            [[projects]]
            name = "sqlmesh_proj"
            format = "sqlmesh"
            path = "sqlmesh_proj"

            [[projects]]
            name = "dbt_proj"
            format = "dbt"
            path = "dbt_proj"
            """
        )
    )
    return GeneratedWorkspace(root, models, raw)


def _sm_ref(relation: str) -> str:
    _cat, schema, table = relation.split(".")
    return f"{schema}.{table}"


def _add_time_filter(sql: str, shape: str) -> str:
    cond = "event_date BETWEEN @start_ds AND @end_ds"
    if shape == "staging":
        return sql.replace("WHERE id IS NOT NULL", f"WHERE id IS NOT NULL AND {cond}")
    if shape == "union":
        return sql.replace("WHERE region <>", f"WHERE {cond} AND region <>")
    return sql.replace("WHERE event_date >=", f"WHERE {cond} AND event_date >=", 1)


def _yaml_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _write_sqlmesh_project(sm_dir: Path, raw: dict[str, dict[str, str]]) -> None:
    (sm_dir / "config.yaml").write_text(
        textwrap.dedent(
            """\
            gateways:
              local:
                connection:
                  type: duckdb
                  database: ../warehouse.duckdb
            default_gateway: local
            model_defaults:
              dialect: duckdb
              start: '2024-01-01'
            disable_anonymized_analytics: true
            """
        )
    )
    lines = []
    for rel, cols in sorted(raw.items()):
        cat, schema, table = rel.split(".")
        fqn = '"' + '"."'.join((cat, schema, table)) + '"'
        lines.append(f"- name: {_yaml_str(fqn)}")
        lines.append("  columns:")
        lines.extend(f"    {c}: {t}" for c, t in cols.items())
    (sm_dir / "external_models.yaml").write_text("\n".join(lines) + "\n")


def _write_dbt_project(dbt_dir: Path, sources: dict[str, set[str]], models: list[GenModel]) -> None:
    (dbt_dir / "dbt_project.yml").write_text(
        textwrap.dedent(
            """\
            name: dbt_proj
            version: "1.0.0"
            config-version: 2
            profile: dbt_proj
            model-paths: ["models"]
            flags:
              send_anonymous_usage_stats: false
            models:
              dbt_proj:
                +materialized: view
                marts:
                  +materialized: table
            """
        )
    )
    (dbt_dir / "profiles.yml").write_text(
        textwrap.dedent(
            """\
            dbt_proj:
              target: prod
              outputs:
                prod:
                  type: duckdb
                  path: "{{ env_var('SPLICE_WAREHOUSE', '../warehouse.duckdb') }}"
                  database: warehouse
                  schema: analytics
                  threads: 4
            """
        )
    )
    lines = ["version: 2", "sources:"]
    for src in sorted(sources):
        lines += [
            f"  - name: {src}",
            f"    database: {CATALOG}",
            f"    schema: {src}",
            "    tables:",
        ]
        for tab in sorted(sources[src]):
            lines.append(f"      - name: {tab}")
            lines.append("        columns:")
            for c, t in COLUMNS.items():
                lines.append(f"          - name: {c}")
                lines.append(f"            data_type: {t}")
    (dbt_dir / "models" / "sources.yml").write_text("\n".join(lines) + "\n")
    by_layer: dict[str, list[GenModel]] = {}
    for m in models:
        by_layer.setdefault(Path(m.path).parent.name, []).append(m)
    for layer, ms in by_layer.items():
        out = ["version: 2", "models:"]
        for m in ms:
            out.append(f"  - name: {m.name}")
            out.append("    columns:")
            for c, t in m.columns.items():
                out.append(f"      - name: {c}")
                out.append(f"        data_type: {t}")
        (dbt_dir / "models" / layer / "_models.yml").write_text("\n".join(out) + "\n")
