"""How an MCP tool call reaches the library: who is calling, which workspace, which errors.

Every tool is a few lines: it names the :mod:`splice.api` function it calls through
:func:`call`, which

- opens a fresh Workspace for the call from the server's :class:`~splice.api.served.Hub` (the graph is
  shared; the state and warehouse connections are the call's own and closed after it);
- works out the calling :class:`~splice.support.principals.Principal`: the authenticated one on
  ``splice serve`` (an API key or an OAuth token, put on the request by
  :mod:`splice.serve.auth`), or, on stdio, the MCP client itself as an *agent* (named after the
  client's ``clientInfo``), which may read and propose but never decide;
- turns a :class:`~splice.errors.SpliceError` into an MCP tool error that carries Splice's
  one-line message, its fix and whether a retry can help (anything else is logged in
  ``.splice/logs/mcp.log`` and reported as an internal error, never a traceback);
- makes the result plain JSON data (dataclasses, dates and paths included), with every
  moment in ISO 8601 (UTC, ``2026-09-28T06:00:00Z``) where the library keeps Unix seconds;
- says, in a refusal, what to do over MCP (which tool, which principal), besides the command
  line's fix (:func:`over_mcp`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from splice.errors import SpliceError
from splice.support.principals import Principal, os_user

if TYPE_CHECKING:
    from splice.api import Workspace

log = logging.getLogger("splice.mcp")

#: What an agent on stdio may do: read, and propose repairs for a person to approve.
STDIO_SCOPES = "read,propose"


def caller() -> Principal | None:
    """The caller as far as it is known without a request's context: the token's principal on
    ``splice serve``; on stdio an agent with :data:`STDIO_SCOPES` (its name comes with the
    request); None for a token that carries no Splice principal."""
    token = get_access_token()
    if token is not None:
        data = (token.claims or {}).get("splice_principal")
        return Principal.from_dict(data) if isinstance(data, dict) else None
    return Principal.of("mcp-client", kind="agent", auth="stdio", scopes=STDIO_SCOPES,
                        credential=f"os-user:{os_user()}")  # fmt: skip


def principal_of(ctx: Context[Any, Any], ws: Workspace | None = None) -> Principal:
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


#: Keys whose numbers are moments (Unix seconds) in the library's results.
_MOMENT_KEYS = frozenset({"at", "until", "since", "ts", "when"})


def _is_moment(key: str, v: Any) -> bool:
    return (
        (key in _MOMENT_KEYS or key.endswith("_at"))
        and type(v) in (int, float)
        and 1e8 < v < 1e11  # 1973..5138: seconds, not a count or a duration
    )


def iso_moment(ts: float) -> str:
    """Unix seconds as ISO 8601 in UTC.

    >>> iso_moment(1790575200), iso_moment(1790575200.75)
    ('2026-09-28T06:00:00Z', '2026-09-28T06:00:00.750Z')
    """
    spec = "seconds" if float(ts).is_integer() else "milliseconds"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec=spec).replace("+00:00", "Z")


def iso_times(value: Any) -> Any:
    """``value`` (plain data) with every moment kept as Unix seconds (``*_at``, ``at``,
    ``until``, ``since``) written in ISO 8601, UTC.

    >>> iso_times({"opened_at": 1790575200, "runs": [{"at": 1790575200.0, "rows": 1790575200}]})
    {'opened_at': '2026-09-28T06:00:00Z', 'runs': [{'at': '2026-09-28T06:00:00Z', 'rows': 1790575200}]}
    """
    if isinstance(value, dict):
        return {k: iso_moment(v) if _is_moment(k, v) else iso_times(v) for k, v in value.items()}
    if isinstance(value, list):
        return [iso_times(v) for v in value]
    return value


#: A command of the command line's fixes, and the MCP tool that does the same.
_COMMANDS: tuple[tuple[str, str], ...] = (
    (r"splice approve (PR-\d+)", r'approve_proposal(proposal_id="\1")'),
    (r"splice reject (PR-\d+)(?: --reason \.\.\.)?", r'reject_proposal(proposal_id="\1", reason=...)'),
    (r"splice undo (PR-\d+)", r'undo_proposal(proposal_id="\1")'),
    (r"splice apply (PR-\d+)", r'apply_proposal(proposal_id="\1")'),
    (r"splice propose (INC-\d+)", r'propose_repair(incident_id="\1")'),
    (r"splice access approve (AG-\d+)", r'approve_access(grant_id="\1")'),
    (r"splice access (reject|revoke) (AG-\d+)(?: --reason \.\.\.)?", r'\1_access(grant_id="\2", reason=...)'),
    (r"splice access show (AG-\d+)", r'get_access_grant(grant_id="\1")'),
    (r"splice access request ('[^']*'|\S+) --for (\S+)", r"request_access(selector=\1, grantee=\2, ...)"),
    (r"splice resume", "resume_repairs()"),
    (r"splice proposals", "list_proposals()"),
    (r"splice incident accept-level", "accept_level"),
    (r"splice runs", "list_runs()"),
    (r"splice propose\b", "propose_repair"),
)  # fmt: skip

#: The decisions only a person makes: an agent is never offered them.
_DECIDING = {
    "approve_proposal", "reject_proposal", "apply_proposal", "undo_proposal", "stop_repairs",
    "resume_repairs", "accept_level", "approve_access", "reject_access", "revoke_access",
}  # fmt: skip


def over_mcp(e: SpliceError, tool: str | None, who: Principal | None) -> str | None:
    """What to do over MCP after a refusal of ``tool`` to ``who``, or None when the command
    line's fix says nothing an MCP client could do differently.

    >>> from splice.errors import AccessError
    >>> bot = Principal.of("ci", kind="agent", auth="api-key", credential="k")
    >>> over_mcp(AccessError("ci may not approve", fix="x"), "approve_proposal", bot)[:65]
    'an agent is not offered approve_proposal: it calls propose_repair'
    >>> over_mcp(AccessError("no", fix="one of them runs splice approve PR-3"), None, None)
    'one of them calls approve_proposal(proposal_id="PR-3") on splice serve'
    """
    import re

    from splice.errors import AccessError, ApprovalError

    if not isinstance(e, (AccessError, ApprovalError)):
        return None
    if who is not None and who.kind != "person" and tool in _DECIDING:
        return (
            f"an agent is not offered {tool}: it calls propose_repair (a repair) or "
            "request_access (read access), and a person who owns the domain, signed in to "
            f"splice serve with a key or token holding the approve scope, calls {tool}"
        )
    fix = e.fix or ""
    if "--scopes" in fix and who is not None:
        need = re.search(r"needs the '(\w+)' scope", e.message)
        scope = need.group(1) if need else "approve"
        return (
            f"connect to splice serve with a key or token holding the {scope} scope "
            f"(splice keys create --scopes read,...,{scope}), or ask a principal that holds it "
            f"to call {tool or 'the tool'}"
        )
    out = fix
    for pattern, repl in _COMMANDS:
        out = re.sub(pattern, repl, out)
    if out == fix:
        return None
    return out.replace(" runs ", " calls ") + (" on splice serve" if "(" in out else "")


def tool_error(e: SpliceError, tool: str | None = None, who: Principal | None = None) -> ToolError:
    """Splice's one-line message, its fix, and, for a refusal, what to do over MCP."""
    text = f"{type(e).__name__}: {e.one_line()}"
    hint = over_mcp(e, tool, who)
    if hint:
        text += f" Over MCP: {hint}."
    return ToolError(text)


@overload
def call(
    ctx: Context[Any, Any],
    fn: Callable[[Workspace], object],
    *,
    principal: Literal[False] = False,
    key: str | None = None,
    notify: bool | None = None,
) -> Any: ...


@overload
def call(
    ctx: Context[Any, Any],
    fn: Callable[[Workspace, Principal], object],
    *,
    principal: Literal[True],
    key: str | None = None,
    notify: bool | None = None,
) -> Any: ...


def call(
    ctx: Context[Any, Any],
    fn: Callable[..., object],
    *,
    principal: bool = False,
    key: str | None = None,
    notify: bool | None = None,
) -> Any:
    """Run ``fn(ws)`` (or ``fn(ws, principal)``) on a fresh workspace; return plain data.
    A list result is returned as ``{key: [...], "count": n}`` (one JSON object per call).
    ``notify`` (default: when a principal decides): tell the ``[[notify]]`` channels after."""
    hub = ctx.mcp_server.splice_hub  # type: ignore[attr-defined]
    who, tool = None, _tool_name()
    try:
        with hub.workspace() as ws:
            who = principal_of(ctx, ws) if principal else None
            result = iso_times(plain(fn(ws, who) if principal else fn(ws)))
        if principal if notify is None else notify:  # now, in the background
            hub.notify_soon()
        return {key: result, "count": len(result)} if key is not None else result
    except SpliceError as e:
        raise tool_error(e, tool, who) from e
    except ToolError:
        raise
    except Exception:
        log.exception("tool call failed")
        raise


def _tool_name(depth: int = 2) -> str | None:
    """The tool being called: every tool calls :func:`call` itself, so it is the function two
    frames up (this one's caller's caller)."""
    import sys

    try:
        return sys._getframe(depth).f_code.co_name
    except ValueError:
        return None
