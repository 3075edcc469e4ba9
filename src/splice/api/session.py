"""Where a session starts and who acts in it: opening a workspace (access due to end revoked
first), the hub a long-lived server answers through, its settings and authenticator, and the
principals the command line and the keys stand for."""

from __future__ import annotations

from typing import Any

from splice.support.principals import Principal
from splice.workspace.core import Workspace


def open_workspace(
    root: Any = ".",
    target: str | None = None,
    *,
    new_state: bool = False,
    use_cache: bool | None = None,
) -> Workspace:
    """Open the workspace at ``root`` (:meth:`splice.workspace.core.Workspace.open`); use it as a
    context manager so that its state and tools are closed.

    The session starts here: access grants whose time is up are revoked (``splice access``: at
    the latest on the next command; a revoke that fails is a line in ``ws.notices`` and is tried
    again), then repair applies a killed process left half-done are recovered, once
    (:func:`splice.api.recovery.recover_killed_applies`)."""
    from splice.api.grants import end_due_access
    from splice.api.recovery import recover_killed_applies
    from splice.errors import SpliceError

    ws = Workspace.open(root, target, new_state=new_state, use_cache=use_cache)
    try:
        ws.notices.extend(end_due_access(ws))
    except SpliceError as e:  # the command goes on; the revoke is tried at the next one
        ws.notices.append(f"access grants due to end were not revoked yet: {e.one_line()}")
    recover_killed_applies(ws)
    return ws


def hub(root: Any, target: str | None = None, *, recheck: float | None = None) -> Any:
    """A :class:`splice.api.served.Hub` for a long-lived server: a fresh workspace per request,
    the graph shared while its files are unchanged (checked every ``recheck`` seconds,
    default ``[serve] recheck_seconds``). A missing workspace or a bad splice.toml is a
    ConfigError now, before anything is served."""
    from splice.api.served import Hub

    h = Hub(root, target)
    config = h._config()
    h.recheck = config.serve.recheck_seconds if recheck is None else recheck
    return h


def authenticator(hub: Any, settings: Any) -> Any:
    """A :class:`splice.auth.tokens.Authenticator` for ``splice serve``: bearer token -> principal
    (API keys checked against the workspace's state, OAuth tokens through the JWKS)."""
    from splice.auth.tokens import Authenticator

    def check_key(raw: str) -> Any:
        with hub.workspace() as ws:
            return authenticate_key(ws, raw)

    def recheck_key(raw: str) -> Any:
        with hub.workspace() as ws:
            return reconfirm_key(ws, raw)

    def agent(principal: Any) -> Any:  # an agent's token never borrows a person's name
        with hub.workspace() as ws:
            return agent_principal(ws, principal)

    return Authenticator(settings, check_key, recheck_key, agent)


def oidc_client(settings: Any) -> Any:
    """The web page's OpenID Connect client at ``[serve.auth.oauth]``'s provider
    (:class:`splice.auth.oidc.OIDCClient`); ConfigError without a ``client_id``."""
    from splice.auth.oidc import OIDCClient

    return OIDCClient(settings.auth.oauth, f"{settings.base_url}/signin/callback")


def serve_settings(
    hub: Any, *, host: str | None = None, port: int | None = None, workers: int | None = None
) -> Any:
    """The workspace's ``[serve]`` settings with command-line overrides applied (validated as
    the file's would be)."""
    from pydantic import ValidationError

    from splice.config.serve import ServeSection
    from splice.config.workspace import load_config
    from splice.errors import InputError

    cfg = load_config(hub.root).serve
    changes = {
        k: v for k, v in (("host", host), ("port", port), ("workers", workers)) if v is not None
    }
    if not changes:
        return cfg
    try:
        return ServeSection.model_validate({**cfg.model_dump(), **changes})
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(
            f"--{err['loc'][0]}: {err['msg']}.", fix="see splice serve --help"
        ) from None


def workspace_config(root: Any) -> Any:
    """The splice.toml of the workspace at ``root``, validated (:class:`WorkspaceConfig`)."""
    from pathlib import Path

    from splice.config.workspace import load_config

    return load_config(Path(root))


def cli_principal(ws: Workspace, as_name: str | None = None, kind: str | None = None) -> Principal:
    """Who the command line decides as: the operating-system user, or ``--as NAME`` where
    splice.toml's ``[policy] allow_as`` is true (refused otherwise, saying what is recorded);
    ``kind`` (``--kind``): a person or an agent (default: an agent when ``[policy] agents``
    lists the name). An agent named like a person is recorded as ``agent:NAME``."""
    from splice.approvals.access import cli_principal as _cli_principal

    who = _cli_principal(ws.config.policy, as_name, kind)
    return agent_principal(ws, who) if who.kind == "agent" else who


def agent_principal(ws: Workspace, principal: Principal) -> Principal:
    """An agent as Splice records it: ``agent:NAME`` when the name it claims is a person's (a
    domain owner, a person's API key) or one of Splice's own, with the claimed name recorded;
    any other principal unchanged."""
    from splice.auth.keys import as_agent

    return as_agent(principal, ws.config, ws.state)


def authenticate_key(ws: Workspace, raw_key: str) -> Principal:
    """The principal an API key stands for (auth ``api-key``, credential the key's id);
    AccessError for a malformed, unknown, wrong or revoked key.  An agent's key whose name is
    a person's (an owner named since the key was made) stands for ``agent:NAME``."""
    from splice.auth.keys import as_agent, authenticate

    return as_agent(authenticate(ws.state, raw_key), ws.config, ws.state)


def reconfirm_key(ws: Workspace, raw_key: str) -> Principal:
    """:func:`authenticate_key` for a key whose secret this process has already checked: the
    state is read again (revoked or removed: AccessError), the secret is not hashed again."""
    from splice.auth.keys import as_agent, reconfirm

    return as_agent(reconfirm(ws.state, raw_key), ws.config, ws.state)


def server_key(ws: Workspace) -> str:
    """The public key (``ed25519:...``) ``splice serve`` signs with, for ``[policy] server_keys``."""
    return ws.server_signer().key_id


def sign_as_server(hub: Any) -> str:
    """From now on this process signs the audit-log entries it writes with the server's key
    (``splice serve`` at start); returns the key's id."""
    from splice.state.signing import use_for_process

    with hub.workspace() as ws:
        signer = ws.server_signer()
    use_for_process(signer)
    return signer.key_id


def credential_active(ws: Workspace, principal: Principal) -> bool:
    """Whether a signed-in principal's credential still holds: an API key not revoked (other
    credentials end with their session's expiry)."""
    from splice.auth.keys import active

    if principal.auth == "api-key" and principal.credential:
        return active(ws.state, principal.credential)
    return True


def may_act(principal: Principal, action: str) -> str | None:
    """None when ``principal`` may ``action`` at all (``propose``, ``approve``, ``reject``,
    ``apply``, ``undo``, ``stop``, ``resume``, ``accept-level``: its kind and scopes, before
    any rule of a particular proposal or grant), else why not, in words. Writes nothing; what
    it offers (the MCP server lists only the tools a principal may call) is decided again by
    the action itself."""
    from splice.approvals.access import require
    from splice.errors import AccessError

    try:
        require(principal, action)
    except AccessError as e:
        return e.message
    return None
