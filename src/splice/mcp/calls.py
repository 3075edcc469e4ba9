"""How an MCP tool call reaches the library: who is calling, which workspace, which errors.

Every tool is a few lines: it names the :mod:`splice.api` function it calls through
:func:`call`, which

- opens a fresh Workspace for the call from the server's :class:`~splice.hub.Hub` (the graph is
  shared; the state and warehouse connections are the call's own and closed after it);
- works out the calling :class:`~splice.principals.Principal`: the authenticated one on
  ``splice serve`` (an API key or an OAuth token, put on the request by
  :mod:`splice.serve.auth`), or, on stdio, the MCP client itself as an *agent* (named after the
  client's ``clientInfo``), which may read and propose but never decide;
- turns a :class:`~splice.errors.SpliceError` into an MCP tool error that carries Splice's
  one-line message, its fix and whether a retry can help (anything else is logged in
  ``.splice/logs/mcp.log`` and reported as an internal error, never a traceback);
- makes the result plain JSON data (dataclasses, dates and paths included).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from splice.errors import SpliceError
from splice.principals import Principal, os_user

T = TypeVar("T")
log = logging.getLogger("splice.mcp")

#: What an agent on stdio may do: read, and propose repairs for a person to approve.
STDIO_SCOPES = "read,propose"


def principal_of(ctx: Context[Any, Any], ws: Any = None) -> Principal:
    """The caller: the token's principal on ``splice serve``, else the stdio client (an agent,
    named ``agent:NAME`` when its client calls itself by a person's name or one of Splice's:
    ``ws``, the workspace whose owners and keys say whose names those are)."""
    token = get_access_token()
    if token is not None:
        data = (token.claims or {}).get("splice_principal")
        if not isinstance(data, dict):  # a verifier that is not Splice's: refuse, never guess
            raise ToolError("this request carries no Splice principal; it cannot be served.")
        return Principal.from_dict(data)
    name = "mcp-client"
    try:
        info = ctx.session.client_params.client_info  # type: ignore[union-attr]
        name = info.name or name
    except (AttributeError, LookupError, ValueError):
        pass
    who = Principal.of(
        name, kind="agent", auth="stdio", scopes=STDIO_SCOPES, credential=f"os-user:{os_user()}"
    )
    if ws is None:
        return who
    from splice import api

    return api.agent_principal(ws, who)


_ATOMS = frozenset({str, int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """``value`` as JSON data: dataclasses and objects with ``as_dict``/``to_dict`` become dicts,
    dates ISO strings, paths strings, sets sorted lists.

    >>> plain({"d": date(2026, 9, 21), "s": {2, 1}})
    {'d': '2026-09-21', 's': [1, 2]}
    """
    # the common case first and without a call per leaf: a tool's result is mostly dicts and
    # lists of strings and numbers (an incident's diagnosis: hundreds of leaves per call)
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): v if type(v) in _ATOMS else plain(v)
                for k, v in value.items()}  # fmt: skip
    if kind is list or kind is tuple:
        return [v if type(v) in _ATOMS else plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=json.dumps)
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    for method in ("as_dict", "to_dict"):
        if callable(getattr(value, method, None)):
            return plain(getattr(value, method)())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    return str(value)


def tool_error(e: SpliceError) -> ToolError:
    """Splice's one-line message, its fix, and whether retrying can help, as a tool error."""
    return ToolError(f"{type(e).__name__}: {e.one_line()}")


def call(
    ctx: Context[Any, Any],
    fn: Callable[..., T],
    *,
    principal: bool = False,
    key: str | None = None,
    notify: bool | None = None,
) -> Any:
    """Run ``fn(ws)`` (or ``fn(ws, principal)``) on a fresh workspace; return plain data.
    A list result is returned as ``{key: [...], "count": n}`` (one JSON object per call).
    ``notify`` (default: when a principal decides): tell the ``[[notify]]`` channels after."""
    hub = ctx.mcp_server.splice_hub  # type: ignore[attr-defined]
    try:
        with hub.workspace() as ws:
            who = principal_of(ctx, ws) if principal else None
            result = plain(fn(ws, who) if principal else fn(ws))
        if principal if notify is None else notify:  # now, in the background
            hub.notify_soon()
        return {key: result, "count": len(result)} if key is not None else result
    except SpliceError as e:
        raise tool_error(e) from e
    except ToolError:
        raise
    except Exception:
        log.exception("tool call failed")
        raise
