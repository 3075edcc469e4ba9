"""``splice ARGS`` run inside the test process, answered as ``python -m splice ARGS`` answers.

The same Click group, the same error boundary, the same stdout and stderr and exit code, without
a new interpreter that imports dbt, SQLMesh, dlt and Splice again for every command (about
1.2 s of CPU a command, a third of the suite's CPU when every command was a process). What
only a process shows (a kill, a signal, a second process holding a lock, the exit of a process
with no thread left) is tested by starting ``python -m splice`` itself.

>>> r = run_cli(["--version"])
>>> r.returncode, r.stdout.startswith("splice, version ")
(0, True)
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """``os.environ`` is exactly ``env`` inside (unchanged when None), as it was after."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_cli(
    args: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,  # noqa: A002 - subprocess.run's name
) -> subprocess.CompletedProcess[str]:
    """``splice ARGS`` in ``cwd`` with the environment ``env`` (the whole environment, as a
    child process would get it; None: this process's), its output captured."""
    from click.testing import CliRunner

    from splice.cli import render
    from splice.cli.main import cli, register_commands
    from splice.state import signing

    register_commands()
    render.console.cache_clear()  # its width and colours are read from the environment
    argv = [str(a) for a in args]
    signer = signing.process_signer()  # a server started in this process signs as the server;
    signing.use_for_process(None)  # a command signs as a command does
    try:
        with _environment(env), contextlib.chdir(cwd or os.getcwd()):
            os.environ.setdefault("GRPC_VERBOSITY", "ERROR")  # as splice.cli.main.main does
            result = CliRunner().invoke(cli, argv, input=input, prog_name="splice")
    finally:
        signing.use_for_process(signer)
        render.console.cache_clear()
    stderr = result.stderr
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # an exception past the boundary: a process would print its traceback and exit 1
        exc = result.exception
        stderr += "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        code = 1
    return subprocess.CompletedProcess(["splice", *argv], code, result.stdout, stderr)
