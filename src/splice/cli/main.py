"""The `splice` command line: parse arguments, call the library, render. No logic lives here."""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import click

from splice.errors import SpliceError


class _State:
    debug = False


def _fail(message: str, code: int) -> None:
    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True, emoji=False).print(
        f"[bold red]Error:[/] {message}", markup=True
    )
    sys.exit(code)


class SpliceGroup(click.Group):
    """The one error boundary: SpliceError -> red one line, exit 2; traceback only with --debug."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SpliceError as e:
            if _State.debug:
                traceback.print_exc()
            _fail(_escape(e.one_line()), e.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            ctx.meta["interrupted"] = True  # the person wants out: no notifying on the way
            _fail("interrupted.", 130)
        except Exception as e:  # noqa: BLE001 - the boundary itself
            if _State.debug:
                traceback.print_exc()
            from splice.support.faults_env import environmental_error

            known = environmental_error(e)  # a locked warehouse, a full disk: not a bug
            if known is not None:
                _fail(_escape(known.one_line()), known.exit_code)
                return None
            _fail(
                _escape(
                    f"unexpected {type(e).__name__}: {e}. This is a bug in Splice; rerun with --debug for the traceback."
                ),
                1,
            )
        finally:
            notify_after(ctx)


#: Commands after which the [[notify]] channels are told what happened (once the result or the
#: error is printed: a dead receiver delays the exit by its timeout, never the decision).
NOTIFY_AFTER = frozenset(
    {
        "propose",
        "approve",
        "reject",
        "apply",
        "undo",
        "stop",
        "resume",
        "watch",
        "proposals",
        "access",
        "migrate",
    }
)


def notify_after(ctx: click.Context) -> None:
    wanted = ctx.invoked_subcommand in NOTIFY_AFTER or ctx.meta.get("notify_after")
    if not wanted or not isinstance(ctx.obj, dict):
        return
    if ctx.meta.get("interrupted"):
        return
    try:
        from splice.api import notify_pending, open_workspace

        with open_workspace(ctx.obj["workspace"], target=ctx.obj.get("target")) as ws:
            if ws.state_exists:  # never the one to make a state
                notify_pending(ws)
    except KeyboardInterrupt:  # what was not sent stays queued for the next command
        return
    except Exception:  # noqa: BLE001, S110 - telling others never fails the command
        if _State.debug:
            traceback.print_exc()


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def execution_time_option(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """Parse ``--execution-time`` before anything starts (a bad date is one red line)."""
    if value is None:
        return None
    from splice.support.clock import parse_execution_time

    ctx.meta["execution_time_text"] = value  # as typed, for the journal's command line
    return parse_execution_time(value)


def _keep_kind(ctx: click.Context, _param: Any, value: str | None) -> None:
    ctx.meta["splice.as_kind"] = value


def kind_option(f: Any) -> Any:
    """``--kind person|agent``, beside a command's ``--as NAME`` (read by :func:`as_kind`)."""
    return click.option(
        "--kind",
        type=click.Choice(["person", "agent"]),
        default=None,
        expose_value=False,
        callback=_keep_kind,
        help="With --as: whether NAME is a person or an agent (default: an agent when "
        "[policy] agents lists NAME, else a person).",
    )(f)


def as_kind() -> str | None:
    """The ``--kind`` given to the running command (None when not given)."""
    return click.get_current_context().meta.get("splice.as_kind")


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, sort_keys=False))


@click.group(cls=SpliceGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-w",
    "--workspace",
    "workspace",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    envvar="SPLICE_WORKSPACE",
    help="The workspace directory (holds splice.toml, or is a dbt/SQLMesh project).",
)
@click.option(
    "-t",
    "--target",
    default=None,
    envvar="SPLICE_TARGET",
    help="Splice target (maps each project to its environment). Default: [workspace].default_target.",
)
@click.option(
    "-v", "--verbose", is_flag=True, help="Show the tools' own output (dbt, SQLMesh, dlt)."
)
@click.option("--debug", is_flag=True, help="Show full tracebacks.")
@click.option(
    "--new-state",
    is_flag=True,
    help="Start a new, empty state although the witness says this workspace had one "
    "(its history, audit log included, is gone).",
)
@click.option(
    "--no-cache",
    is_flag=True,
    envvar="SPLICE_NO_CACHE",
    help="Load the graph and column lineage through dbt and SQLMesh, ignoring the graph cache.",
)
@click.version_option(package_name="splice")
@click.pass_context
def cli(
    ctx: click.Context,
    workspace: str,
    target: str | None,
    verbose: bool,
    debug: bool,
    new_state: bool,
    no_cache: bool,
) -> None:
    """Splice: one graph, one plan and one production watch across dbt and SQLMesh."""
    from splice.support.capture import set_verbose

    _State.debug = debug
    set_verbose(verbose)
    ctx.obj = {
        "workspace": Path(workspace),
        "target": target,
        "new_state": new_state,
        "no_cache": no_cache,
    }


def open_workspace(ctx: click.Context) -> Any:
    from splice.api import open_workspace as open_ws

    ws = open_ws(
        ctx.obj["workspace"],
        target=ctx.obj["target"],
        new_state=ctx.obj.get("new_state", False),
        use_cache=False if ctx.obj.get("no_cache") else None,
    )
    if ws.notices:
        from rich.console import Console

        err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
        for line in ws.notices:
            err.print(f"[yellow]Warning:[/] {_escape(line)}", markup=True)
    return ws


COMMAND_MODULES = (
    "commands",
    "plan_cmds",
    "run_cmds",
    "watch_cmds",
    "incident_cmds",
    "repair_flow_cmds",
    "repair_cmds",
    "read_cmds",
    "serve_cmds",
    "notify_cmds",
    "keys_cmds",
    "state_cmds",
    "review_cmds",
    "access_cmds",
    "migrate_cmds",
    "local_cmds",
    "operator_cmds",
)


def register_commands() -> None:
    import importlib

    for name in COMMAND_MODULES:
        try:
            importlib.import_module(f"splice.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"splice.cli.{name}":
                raise


def main() -> None:
    # gRPC (pyspark's Spark Connect client) notes every fork on stderr; its errors stay
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    register_commands()
    try:
        cli(prog_name="splice")
        code: int | str | None = 0
    except SystemExit as e:
        code = e.code
    _exit(code)


def _exit(code: int | str | None) -> None:
    """End the process without tearing the interpreter down object by object.

    After a run the process holds dbt's manifest, SQLMesh's models and their sqlglot trees:
    Python's normal exit frees them one at a time (about 0.6 s on the demo, after the work is
    done). Everything an exit owes is done first: the atexit handlers (dbt's and DuckDB's
    connections, logging's flush), stdout and stderr flushed. With another non-daemon thread
    still running, the normal exit waits for it as usual.
    """
    import atexit
    import contextlib
    import os
    import threading

    if isinstance(code, str):  # sys.exit("message"): print it, exit 1
        print(code, file=sys.stderr)
        code = 1
    status = 0 if code is None else int(code)
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if others:
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe (`splice ... | head`): nothing is left to flush to
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    # Under `python -m splice.cli.main` this file runs as __main__, a second copy of the module:
    # the commands register on the importable splice.cli.main, so run that one's group.
    from splice.cli.main import main as _main

    _main()
