"""Whether a run emits OpenLineage events, decided without importing the OpenLineage client.

Splice emits only where the OpenLineage client would be configured on purpose, looking where
the client itself looks (``openlineage.client.OpenLineageClient``): ``OPENLINEAGE_CONFIG`` (a
YAML file), ``openlineage.yml`` in the working directory or in ``~/.openlineage/``,
``OPENLINEAGE__TRANSPORT...`` variables, ``OPENLINEAGE_URL``; and, for Splice, an
``openlineage.yml`` beside ``splice.toml``. ``OPENLINEAGE_DISABLED=true`` turns it all off.
The client's own fallback when nothing is set (printing events to the console) never applies:
with none of these, a run imports nothing of OpenLineage.

>>> nowhere = Path("/nonexistent")
>>> configured(None, env={}, cwd=nowhere, home=nowhere) is None
True
>>> configured(None, env={"OPENLINEAGE_URL": "http://marquez:5000"}, cwd=nowhere, home=nowhere)
'OPENLINEAGE_URL'
>>> configured(None, env={"OPENLINEAGE_URL": "http://m", "OPENLINEAGE_DISABLED": "true"},
...            cwd=nowhere, home=nowhere) is None
True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: The file name the OpenLineage client looks for (in the working directory and
#: ``~/.openlineage``); Splice looks beside ``splice.toml`` too.
CONFIG_FILE = "openlineage.yml"

#: The namespace of Splice's jobs, unless ``OPENLINEAGE_NAMESPACE`` names another.
DEFAULT_NAMESPACE = "splice"


def _readable(path: Path) -> bool:
    try:
        return path.is_file() and os.access(path, os.R_OK)
    except OSError:
        return False


def disabled(env: Mapping[str, str] | None = None) -> bool:
    """``OPENLINEAGE_DISABLED=true`` (any case), as the client reads it.

    >>> disabled({"OPENLINEAGE_DISABLED": " TRUE "}), disabled({})
    (True, False)
    """
    env = os.environ if env is None else env
    return env.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true"


def configured(
    root: Path | None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
) -> str | None:
    """Where the OpenLineage configuration comes from (the first the client would read), or
    None when nothing is configured or ``OPENLINEAGE_DISABLED=true``: then nothing is emitted.

    ``root`` is the workspace's directory (its ``openlineage.yml`` counts too).

    >>> nowhere = Path("/nonexistent")
    >>> configured(None, env={"OPENLINEAGE__TRANSPORT__TYPE": "console"}, cwd=nowhere,
    ...            home=nowhere)
    'OPENLINEAGE__TRANSPORT variables'
    """
    env = os.environ if env is None else env
    if disabled(env):
        return None
    own = _clients_file(env, cwd, home)
    if own is not None:
        return own
    if any(k.startswith("OPENLINEAGE__TRANSPORT") for k in env):
        return "OPENLINEAGE__TRANSPORT variables"
    if env.get("OPENLINEAGE_URL"):
        return "OPENLINEAGE_URL"
    if root is not None and _readable(root / CONFIG_FILE):
        return str(root / CONFIG_FILE)
    return None


def workspace_config(root: Path | None, *, env: Mapping[str, str] | None = None) -> Path | None:
    """The workspace's ``openlineage.yml``, when the client would not find a file of its own
    (no ``OPENLINEAGE_CONFIG``, none in the working directory or ``~/.openlineage``): Splice
    then hands its content to the client as the client's configuration.

    >>> workspace_config(None) is None
    True
    """
    env = os.environ if env is None else env
    if root is None or not _readable(root / CONFIG_FILE):
        return None
    return None if _clients_file(env, None, None) is not None else root / CONFIG_FILE


def _clients_file(env: Mapping[str, str], cwd: Path | None, home: Path | None) -> str | None:
    """The configuration file the OpenLineage client reads by itself, where it looks for one
    (``OPENLINEAGE_CONFIG``, then ``openlineage.yml`` in the working directory, then in
    ``~/.openlineage``), said as :func:`configured` says it; None when there is none."""
    explicit = env.get("OPENLINEAGE_CONFIG")
    if explicit and _readable(Path(explicit)):
        return f"OPENLINEAGE_CONFIG ({explicit})"
    cwd = Path.cwd() if cwd is None else cwd
    home = Path.home() if home is None else home
    for place in (cwd / CONFIG_FILE, home / ".openlineage" / CONFIG_FILE):
        if _readable(place):
            return str(place)
    return None


def namespace(env: Mapping[str, str] | None = None) -> str:
    """The namespace of Splice's jobs: ``OPENLINEAGE_NAMESPACE``, else ``splice``.

    >>> namespace({}), namespace({"OPENLINEAGE_NAMESPACE": "prod-data"})
    ('splice', 'prod-data')
    """
    env = os.environ if env is None else env
    return env.get("OPENLINEAGE_NAMESPACE") or DEFAULT_NAMESPACE


def listener(ws: Workspace, run_id: str) -> Callable[[Any], None] | None:
    """The journal listener that emits this run's OpenLineage events
    (:class:`splice.openlineage.emit.RunEmitter`), or None when nothing is configured (the
    OpenLineage client is then not imported)."""
    if configured(ws.root) is None:
        return None
    from splice.openlineage.emit import emitter_for

    return emitter_for(
        ws, run_id, job_namespace=namespace(), workspace_file=workspace_config(ws.root)
    )
