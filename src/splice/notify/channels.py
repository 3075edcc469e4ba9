"""Rendering and sending one event to one channel: a webhook (generic JSON or Slack's incoming
webhook format) or an email over SMTP.  :func:`send` never raises: it returns the error.

A channel's ``type`` picks its sender in :data:`CHANNELS`, a webhook's ``format`` its body in
:data:`WEBHOOK_BODIES`: a new kind of channel is one function and one line there.

>>> from splice.notify.events import Event
>>> e = Event("audit:7", "proposal_requested", 0.0, "Proposal PR-1 waits for approval by maria",
...           "prod", "INC-1", "PR-1", "splice-agent", "splice approve PR-1")
>>> json_body(e)["next_command"]
'splice approve PR-1'
>>> slack_body(e)["text"]
'Proposal PR-1 waits for approval by maria. Next: `splice approve PR-1`'
>>> email_message(e, "splice@example.com", ["maria@example.com"])["Subject"]
'[splice] Proposal PR-1 waits for approval by maria'
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from email.message import EmailMessage
from typing import Any

from splice.config.notify import NotifySection
from splice.notify.events import Event
from splice.support import http

USER_AGENT = "splice-notify/1"


def json_body(e: Event) -> dict[str, Any]:
    """The generic webhook body."""
    return {
        "source": "splice",
        "event": e.kind,
        "summary": e.summary,
        "workspace": e.workspace,
        "target": e.target,
        "incident_id": e.incident_id,
        "proposal_id": e.proposal_id,
        "actor": e.actor,
        "next_command": e.next_command,
        "at": e.at,
        "when": e.when,
        "details": e.details,
        "key": e.key,
    }


def _mrkdwn(text: str) -> str:
    """Slack's three escapes (its markup reads <...> as links)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _facts(e: Event) -> list[tuple[str, str]]:
    facts = [("Target", e.target or "all targets"), ("Decided by", e.actor)]
    if e.incident_id:
        facts.append(("Incident", e.incident_id))
    if e.proposal_id:
        facts.append(("Proposal", e.proposal_id))
    return facts


def slack_body(e: Event) -> dict[str, Any]:
    """Slack's incoming-webhook body: ``text`` (the notification's fallback) and ``blocks``."""
    fields = [{"type": "mrkdwn", "text": f"*{k}*\n{_mrkdwn(v)}"} for k, v in _facts(e)]
    detail = [f"{k}: {v}" for k, v in e.details.items() if k != "title" and v not in (None, "")]
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{_mrkdwn(e.summary)[:2900]}*"}},
        {"type": "section", "fields": fields},
    ]
    if detail:
        blocks.append({"type": "section",
                       "text": {"type": "mrkdwn", "text": _mrkdwn("\n".join(detail))[:2900]}})  # fmt: skip
    blocks.append({"type": "context", "elements": [
        {"type": "mrkdwn", "text": f"Next: `{_mrkdwn(e.next_command)}` · {e.workspace} · {e.when}"}
    ]})  # fmt: skip
    return {"text": f"{e.summary[:2900]}. Next: `{e.next_command}`", "blocks": blocks}


def email_text(e: Event) -> str:
    lines = [e.summary, ""]
    lines += [f"{k}: {v}" for k, v in _facts(e)]
    lines.append(f"When: {e.when}")
    lines += [f"{k.replace('_', ' ').capitalize()}: {v}" for k, v in e.details.items()
              if v not in (None, "", [])]  # fmt: skip
    lines += ["", f"Next: {e.next_command}", "", f"-- Splice, workspace {e.workspace}"]
    return "\n".join(lines) + "\n"


def email_message(e: Event, sender: str, to: list[str]) -> EmailMessage:
    msg = EmailMessage()
    msg["Subject"] = f"[splice] {e.summary}"
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    msg["X-Splice-Event"] = e.kind
    msg.set_content(email_text(e))
    return msg


def _env(name: str, what: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise ValueError(f"environment variable {name} (the {what}) is not set")
    return value


def _post(url: str, body: dict[str, Any], timeout: float) -> None:
    """POST ``body`` once (the outbox tries again on its own schedule); ValueError saying why
    it was not accepted."""
    try:
        http.request("POST", url, content=json.dumps(body, default=str).encode(),
                     headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
                     timeout=timeout, retry=http.ONCE)  # fmt: skip
    except http.ErrorStatus as err:
        text = err.text[:300]
        raise ValueError(
            f"HTTP {err.status} {err.phrase}" + (f": {text}" if text else "")
        ) from None
    except http.NoAnswer as err:
        raise ValueError(
            err.reason if err.timed_out else f"cannot reach the webhook: {err.reason}"
        ) from None


def _webhook(c: NotifySection, e: Event) -> None:
    """POST ``e`` to the channel's webhook, in its format."""
    url = c.url or _env(str(c.url_env), "webhook URL")
    _post(url, WEBHOOK_BODIES[c.format](e), c.timeout)


def _mail(c: NotifySection, e: Event) -> None:
    """Send ``e`` as an email over SMTP."""
    import smtplib
    import ssl

    assert c.host and c.sender
    with smtplib.SMTP(c.host, c.port, timeout=c.timeout) as smtp:
        if c.starttls:
            smtp.starttls(context=ssl.create_default_context())
        if c.username:
            password = _env(c.password_env, "SMTP password") if c.password_env else ""
            smtp.login(c.username, password)
        smtp.send_message(email_message(e, c.sender, c.to), from_addr=c.sender, to_addrs=c.to)


#: A webhook's body per ``format``.
WEBHOOK_BODIES: dict[str, Callable[[Event], dict[str, Any]]] = {
    "json": json_body,
    "slack": slack_body,
}

#: How each ``type`` of channel sends an event (raising on failure).
CHANNELS: dict[str, Callable[[NotifySection, Event], None]] = {
    "webhook": _webhook,
    "email": _mail,
}


def send(c: NotifySection, e: Event) -> str | None:
    """Send ``e`` to channel ``c`` (one attempt, ``c.timeout`` seconds at most); returns None
    when it was accepted, else the error in words (never the URL: it may hold a secret).

    >>> from typing import get_args
    >>> fields = NotifySection.model_fields
    >>> sorted(CHANNELS) == sorted(get_args(fields["type"].annotation))
    True
    >>> sorted(WEBHOOK_BODIES) == sorted(get_args(fields["format"].annotation))
    True
    """
    try:
        CHANNELS[c.type](c, e)
    except TimeoutError:
        return f"no answer within {c.timeout:g} s"
    except Exception as err:  # noqa: BLE001 - a channel's failure is reported, never raised
        text = str(err) or type(err).__name__
        return text if isinstance(err, ValueError) else f"{type(err).__name__}: {text}"
    return None
