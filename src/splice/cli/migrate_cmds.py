"""``splice migrate plan | approve | run | check | status | complete``: move a target's
relations to another target's warehouse in approved waves, each checked for parity."""

from __future__ import annotations

from typing import Any

import click

from splice.cli.main import as_kind, cli, emit_json, kind_option, open_workspace
from splice.cli.repair_cmds import AS_HELP


def _progress(line: str) -> None:
    click.echo(line, err=True)


def _status_lines(m: dict[str, Any]) -> list[str]:
    out = [f"{m['migration_id']} {m['source']} -> {m['dest']}: {m['status']}"]
    for w in m["waves"]:
        who = f", approved by {w['approved_by']['name']}" if w.get("approved_by") else ""
        rows = sum(r.get("rows") or 0 for r in w["relations"])
        out.append(f"  wave {w['index']} {w['name']} ({w['kind']}, {len(w['relations'])} relation(s), "
                   f"{rows} rows): {w['status']}{who}")  # fmt: skip
        checks = w.get("checks") or []
        if checks:
            bad = [c for c in checks if not c["ok"]]
            out.append(f"    checks: {len(checks) - len(bad)} of {len(checks)} pass")
            for c in bad[:10]:
                out.append(f"    ✗ {c['kind']} {c['subject']}: {c['detail']}")
        elif w.get("error"):
            out.append(f"    ✗ {w['error']}")
        if not checks and w["status"] in ("planned", "approved"):
            for r in w["relations"]:
                rows = "?" if r.get("rows") is None else r["rows"]
                how = ("moved with its job, rows only" if r.get("extra") else
                       f"schema, rows, checksum, sums per {r['time_column']}" if r.get("time_column")
                       else "schema, rows, checksum, sums over the whole table")  # fmt: skip
                out.append(f"    {r['relation']}: {rows} rows; checks {how}")
            if w["metrics"]:
                out.append(f"    metrics compared per interval: {', '.join(w['metrics'])}")
    return out


def _show(m: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(m)
        return
    for line in _status_lines(m):
        click.echo(line)


@cli.group("migrate")
def migrate_group() -> None:
    """Move a target to another warehouse in waves, each approved and checked for parity."""


@migrate_group.command("plan")
@click.option("--from", "source", required=True, metavar="TARGET", help="The target moved.")
@click.option("--to", "dest", required=True, metavar="TARGET",
              help="The target it moves to (its own [targets.NAME.warehouse]).")  # fmt: skip
@click.option("--tolerance", type=float, default=0.0001, show_default=True,
              help="How far a floating-point value may differ per row (sums and metrics).")  # fmt: skip
@click.option("--relative-tolerance", type=float, default=1e-6, show_default=True,
              help="How far a sum or a declared metric may differ, relative to its value.")  # fmt: skip
@click.option("--execution-time", default=None, metavar="DATE",
              help="The clock the rebuild waves run with (default: as `splice run`).")  # fmt: skip
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_context
def migrate_plan_cmd(ctx: click.Context, source: str, dest: str, tolerance: float,
                     relative_tolerance: float, execution_time: str | None, actor: str | None,
                     as_json: bool) -> None:  # fmt: skip
    """Plan the waves: raw relations copied, then each project rebuilt by its own tool."""
    from splice.api import cli_principal, migrate_plan

    ctx.obj["target"] = source
    if execution_time is not None:
        from splice.cli.main import execution_time_option

        execution_time = execution_time_option(ctx, None, execution_time).isoformat()  # type: ignore[arg-type]
    with open_workspace(ctx) as ws:
        m = migrate_plan(ws, to=dest, principal=cli_principal(ws, actor, as_kind()),
                         execution_time=execution_time, tolerance=tolerance,
                         relative_tolerance=relative_tolerance)  # fmt: skip
    _show(m, as_json)
    if not as_json:
        click.echo(
            f"Next: an owner approves wave 1: splice migrate approve {m['migration_id']} --wave 1"
        )


@migrate_group.command("approve")
@click.argument("migration_id")
@click.option("--wave", type=int, default=None, help="The wave (default: the next not approved).")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--comment", default=None, help="Why (goes into the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Print the migration as JSON.")
@click.pass_context
def migrate_approve_cmd(ctx: click.Context, migration_id: str, wave: int | None,
                        actor: str | None, comment: str | None, as_json: bool) -> None:  # fmt: skip
    """Approve a wave as a named owner of one of its domains (never the planner)."""
    from splice.api import cli_principal, migrate_approve

    with open_workspace(ctx) as ws:
        m = migrate_approve(ws, migration_id, wave=wave, principal=cli_principal(ws, actor, as_kind()),
                            comment=comment)  # fmt: skip
    _show(m, as_json)


def _run_like(ctx: click.Context, fn: str, migration_id: str, actor: str | None,
              as_json: bool, **kw: Any) -> None:  # fmt: skip
    from splice import api

    with open_workspace(ctx) as ws:
        m = getattr(api, fn)(ws, migration_id, principal=api.cli_principal(ws, actor, as_kind()),
                             progress=_progress, **kw)  # fmt: skip
    _show(m, as_json)
    failed = any(w["status"] == "failed" for w in m["waves"])
    if failed:
        ctx.exit(1)


@migrate_group.command("run")
@click.argument("migration_id")
@click.option("--wave", type=int, default=None,
              help="The wave (default: the next that has not passed); a failed one resumes.")  # fmt: skip
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--json", "as_json", is_flag=True, help="Print the migration as JSON.")
@click.pass_context
def migrate_run_cmd(ctx: click.Context, migration_id: str, wave: int | None, actor: str | None,
                    as_json: bool) -> None:  # fmt: skip
    """Run an approved wave and its parity checks; exit 1 when a check fails."""
    _run_like(ctx, "migrate_run", migration_id, actor, as_json, wave=wave)


@migrate_group.command("check")
@click.argument("migration_id")
@click.option("--wave", type=int, required=True, help="The wave to check again.")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--json", "as_json", is_flag=True, help="Print the migration as JSON.")
@click.pass_context
def migrate_check_cmd(ctx: click.Context, migration_id: str, wave: int, actor: str | None,
                      as_json: bool) -> None:  # fmt: skip
    """Run a wave's parity checks again, moving nothing; exit 1 when one fails."""
    _run_like(ctx, "migrate_check", migration_id, actor, as_json, wave=wave)


@migrate_group.command("status")
@click.argument("migration_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def migrate_status_cmd(ctx: click.Context, migration_id: str | None, as_json: bool) -> None:
    """Every wave of a migration (or of every migration) and its checks."""
    from splice.api import migrate_status

    with open_workspace(ctx) as ws:
        found = migrate_status(ws, migration_id)
    if as_json:
        emit_json(found[0] if migration_id else found)
        return
    if not found:
        click.echo("No migration. splice migrate plan --from TARGET --to TARGET plans one.")
    for m in found:
        for line in _status_lines(m):
            click.echo(line)


@migrate_group.command("complete")
@click.argument("migration_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON.")
@click.pass_context
def migrate_complete_cmd(ctx: click.Context, migration_id: str, actor: str | None,
                         as_json: bool) -> None:  # fmt: skip
    """Check every wave once more and sign the migration complete (an owner): its receipt."""
    from splice.api import cli_principal, migrate_complete

    with open_workspace(ctx) as ws:
        r = migrate_complete(ws, migration_id, principal=cli_principal(ws, actor, as_kind()),
                             progress=_progress)  # fmt: skip
    if as_json:
        emit_json(r)
        return
    checks = sum(len(w["checks"]) for w in r["waves"])
    click.echo(f"{r['migration']} {r['from']} -> {r['to']} complete, signed by "
               f"{r['completed_by']['name']}: {len(r['waves'])} waves, {checks} checks passed.")  # fmt: skip
    for w in r["waves"]:
        click.echo(f"  wave {w['index']} {w['name']}: approved by {w['approved_by']['name']}, "
                   f"{len(w['checks'])} checks")  # fmt: skip
