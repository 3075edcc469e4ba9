"""[[notify]] channels, end to end with real receivers on 127.0.0.1: the webhook's generic JSON,
Slack's format and an email over SMTP; escalation and expiry on time; a dead or silent receiver
never blocks a decision; no message is sent twice, even by two processes at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner
from notify_support import (
    body_text,
    free_port,
    http_receiver,
    silent_port,
    smtp_server,
    write_workspace,
)
from tests.repair.principals_support import as_principal, person

from splice import api
from splice.approvals import autonomy
from splice.cli.main import cli, register_commands
from splice.errors import ConfigError
from splice.repair import approvals, store
from splice.repair.model import Proposal, Step
from splice.workspace.core import Workspace

register_commands()
T0 = 1_790_000_000.0  # 2026-09-21: expiry (4h) and escalation (2h, two owners) count from it
HOUR = 3600.0
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _pending(ws: Workspace, *, by: str = "splice-agent", t0: float = T0) -> Proposal:
    """A pending proposal as propose leaves it (propose itself runs in the demo test)."""
    p = Proposal(
        store.new_proposal_id(ws.state), "INC-1", ws.target, "pricing", "restatement",
        "Repair INC-1: stale rates", "the vendor served Friday's rates",
        date(2026, 9, 28), date(2026, 9, 29),
        [Step("restate", "pricing", ["pricing:fx.daily_rates"], date(2026, 9, 28),
              date(2026, 9, 29), ["sqlmesh", "plan"])],
        ["sqlmesh plan prod --restate-model fx.daily_rates"], {}, None, by, t0, t0 + 4 * HOUR,
    )  # fmt: skip
    store.save(ws.state, p, principal=as_principal(by), now=t0)

    def requested(cur: Proposal) -> None:
        cur.requested_at = t0

    return store.transition(ws.state, p.proposal_id, "pending", principal=as_principal(by), now=t0,
                            update=requested)  # fmt: skip


def _webhook(name: str, url: str, extra: str = "") -> str:
    return f'[[notify]]\nname = "{name}"\ntype = "webhook"\nurl = "{url}"\n{extra}\n'


def _cli(ws: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["-w", str(ws), *args])


def test_each_channel_gets_the_decision_in_its_format(tmp_path: Path) -> None:
    with http_receiver() as rx, smtp_server() as mail:
        root = write_workspace(tmp_path / "ws", _webhook("ops", f"{rx.url}/json")
            + _webhook("slack", f"{rx.url}/slack", 'format = "slack"\nevents = ["proposal_approved"]')
            + f'[[notify]]\nname = "mail"\ntype = "email"\nhost = "127.0.0.1"\nport = {mail.port}\n'
              'from = "splice@travel.example"\nto = ["maria@travel.example", "sam@travel.example"]\n')  # fmt: skip
        with Workspace.open(root) as ws:
            p = _pending(ws)
            approvals.approve(
                ws, p.proposal_id, principal=person("sam"), comment="numbers checked", now=T0 + 60
            )
            report = api.notify_pending(ws)
        assert (report.delivered, report.pending, report.errors) == (5, 0, [])

        # the generic JSON: what happened, the target, the ids, who decided, the next command
        got = rx.on("/json")
        assert [b["event"] for b in got] == ["proposal_requested", "proposal_approved"]
        asked, approved = got
        assert (
            asked["summary"]
            == "Proposal PR-1 waits for approval by maria: Repair INC-1: stale rates"
        )
        assert asked["next_command"] == "splice approve PR-1"
        assert (asked["actor"], asked["target"], asked["incident_id"]) == (
            "splice-agent",
            "prod",
            "INC-1",
        )
        assert approved["actor"] == "sam" and approved["proposal_id"] == "PR-1"
        assert approved["next_command"] == "splice apply PR-1"
        assert approved["details"]["comment"] == "numbers checked"
        assert approved["workspace"] == "travel"

        # Slack: only the event the channel asked for, as {"text", "blocks"}
        (slack,) = rx.on("/slack")
        assert set(slack) == {"text", "blocks"}
        assert slack["text"].startswith("Proposal PR-1 approved by sam")
        assert "`splice apply PR-1`" in slack["text"]
        fields = [
            f["text"]
            for b in slack["blocks"]
            if b["type"] == "section"
            for f in b.get("fields", [])
        ]
        assert (
            "*Decided by*\nsam" in fields
            and "*Proposal*\nPR-1" in fields
            and "*Target*\nprod" in fields
        )

        # email: one message per event, to every recipient
        assert len(mail.messages) == 2
        sender, to, msg = mail.messages[1]
        assert sender == "splice@travel.example"
        assert to == ["maria@travel.example", "sam@travel.example"]
        assert msg["Subject"] == "[splice] Proposal PR-1 approved by sam: Repair INC-1: stale rates"
        text = body_text(msg)
        assert "Decided by: sam" in text and "Next: splice apply PR-1" in text
        assert "Incident: INC-1" in text


def test_escalation_and_expiry_are_told_when_housekeeping_runs(tmp_path: Path) -> None:
    with http_receiver() as rx:
        root = write_workspace(tmp_path / "ws", _webhook("ops", f"{rx.url}/hook"))
        with Workspace.open(root) as ws:
            p = _pending(ws)
            api.housekeeping(ws, now=T0 + HOUR)  # maria alone is asked for 2h
            assert [b["event"] for b in rx.on("/hook")] == ["proposal_requested"]
            api.housekeeping(ws, now=T0 + 2 * HOUR + 1)
            esc = rx.on("/hook")[-1]
            assert esc["event"] == "request_escalated" and esc["actor"] == "splice"
            assert esc["summary"] == "Proposal PR-1 is still unanswered: sam is asked as well"
            assert esc["next_command"] == "splice approve PR-1"
            assert esc["details"]["asked"] == ["maria", "sam"]
            api.housekeeping(ws, now=T0 + 3 * HOUR)  # nothing new: nothing sent
            assert len(rx.bodies) == 2
            api.housekeeping(ws, now=T0 + 4 * HOUR + 1)
            exp = rx.on("/hook")[-1]
            assert exp["event"] == "request_expired" and exp["proposal_id"] == p.proposal_id
            assert "never granted by waiting" in exp["summary"]
            assert exp["next_command"] == "splice propose INC-1"
            assert store.load(ws.state, p.proposal_id).status == "expired"


def test_a_dead_receiver_never_blocks_an_approval_and_is_retried_then_given_up(
    tmp_path: Path,
) -> None:
    dead = free_port()  # nothing listens there
    root = write_workspace(tmp_path / "ws", _webhook("ops", f"http://127.0.0.1:{dead}/x",
                                                     "max_attempts = 3"))  # fmt: skip
    with Workspace.open(root) as ws:
        p = _pending(ws, t0=time.time())
    t = time.perf_counter()
    r = _cli(root, "approve", p.proposal_id, "--as", "maria")
    assert r.exit_code == 0, r.output
    assert time.perf_counter() - t < 5
    assert f"{p.proposal_id} approved by maria" in r.output
    with Workspace.open(root) as ws:
        assert store.load(ws.state, p.proposal_id).status == "approved"
        s = api.notify_status(ws)
        assert s["counts"]["pending"] == 2  # one tried; the channel rests until the next call
        tried = [w for w in s["waiting"] if w["attempts"]]
        assert len(tried) == 1 and "Connection refused" in tried[0]["last_error"]
        # retried by later calls once the backoff has passed, then given up
        later = time.time()
        for _ in range(7):
            later += 3700
            api.notify_pending(ws, now=later)
        s = api.notify_status(ws)
        assert s["counts"] == {"pending": 0, "sending": 0, "delivered": 0, "failed": 2}
        assert all(w["attempts"] == 3 for w in s["waiting"])
    log = (root / ".splice" / "logs" / "notify.log").read_text()
    assert "FAILED ops proposal_approved PR-1: gave up after 3 attempts" in log
    r = _cli(root, "notify", "status")
    assert r.exit_code == 0 and "2 failed" in r.output and "Connection refused" in r.output


def test_a_silent_receiver_costs_one_timeout_per_call(tmp_path: Path) -> None:
    with silent_port() as port:
        root = write_workspace(tmp_path / "ws", _webhook("slow", f"http://127.0.0.1:{port}/x",
                                                         "timeout = 0.5"))  # fmt: skip
        with Workspace.open(root) as ws:
            p = _pending(ws, t0=time.time())
        t = time.perf_counter()
        r = _cli(root, "reject", p.proposal_id, "--as", "maria", "--reason", "wrong scope")
        took = time.perf_counter() - t
    assert r.exit_code == 0, r.output
    assert "rejected by maria" in r.output
    assert 0.5 <= took < 3  # two messages due, one timeout: the channel rests until the next call
    with Workspace.open(root) as ws:
        assert store.load(ws.state, p.proposal_id).status == "rejected"
        (tried,) = [w for w in api.notify_status(ws)["waiting"] if w["attempts"]]
        assert "0.5 s" in tried["last_error"] or "timed out" in tried["last_error"]


def test_a_message_is_sent_once_per_event_and_channel_even_by_two_processes(
    tmp_path: Path,
) -> None:
    with http_receiver(delay=0.2) as rx:
        root = write_workspace(tmp_path / "ws", _webhook("a", f"{rx.url}/a")
                               + _webhook("b", f"{rx.url}/b"))  # fmt: skip
        with Workspace.open(root) as ws:
            for _ in range(3):
                p = _pending(ws)
                approvals.approve(ws, p.proposal_id, principal=person("maria"), now=T0 + 5)
            autonomy.stop(ws.state, ws.config, principal=person("lee"), reason="close", now=T0 + 6)
        code = ("import sys; from splice.workspace.core import Workspace; from splice import api\n"
                "with Workspace.open(sys.argv[1]) as ws: print(api.notify_pending(ws).delivered)")  # fmt: skip
        env = {**os.environ, "PYTHONPATH": SRC}
        procs = [subprocess.Popen([sys.executable, "-c", code, str(root)], env=env,
                                  stdout=subprocess.PIPE, text=True) for _ in range(2)]  # fmt: skip
        sent = [int(pr.communicate(timeout=120)[0]) for pr in procs]
        assert all(pr.returncode == 0 for pr in procs)
        with Workspace.open(root) as ws:
            again = api.notify_pending(ws)  # and once more, in this process
        assert again.delivered == again.queued == 0
        events = 3 * 2 + 1  # requested and approved per proposal, the stop
        assert sum(sent) == 2 * events
        for path in ("/a", "/b"):
            keys = [b["key"] for b in rx.on(path)]
            assert len(keys) == len(set(keys)) == events


def test_the_cli_tells_the_channels_after_a_stop_and_tests_a_channel(tmp_path: Path) -> None:
    with http_receiver() as rx:
        root = write_workspace(tmp_path / "ws", _webhook("ops", f"{rx.url}/ops")
                               + _webhook("quiet", f"{rx.url}/quiet", 'events = ["incident_opened"]'))  # fmt: skip
        r = _cli(root, "stop", "--as", "lee", "--reason", "quarter close freeze")
        assert r.exit_code == 0 and "Stopped org-wide by lee" in r.output
        (stop,) = rx.on("/ops")
        assert stop["event"] == "stop_started" and stop["actor"] == "lee"
        assert stop["summary"] == "Org-wide stop by lee: quarter close freeze"
        assert stop["next_command"] == "splice resume"
        r = _cli(root, "resume", "--as", "maria")
        assert r.exit_code == 0
        assert [b["event"] for b in rx.on("/ops")] == ["stop_started", "stop_ended"]
        assert rx.on("/quiet") == []  # filtered

        r = _cli(root, "notify", "test", "--channel", "quiet")
        assert r.exit_code == 0 and "quiet (webhook): delivered" in r.output
        assert rx.on("/quiet")[0]["event"] == "test"
        r = _cli(root, "notify", "test", "--channel", "nope")
        assert r.exit_code == 2 and "no [[notify]] channel 'nope'" in r.output
        r = _cli(root, "notify", "status", "--json")
        assert json.loads(r.output)["counts"]["delivered"] == 2


def test_an_upgraded_state_does_not_send_its_history(tmp_path: Path) -> None:
    """A workspace whose state predates notifications: its past decisions are not sent."""
    import sqlite3

    from splice.state import store as state_store
    from splice.state.migrations import MIGRATIONS

    with http_receiver() as rx:
        root = write_workspace(tmp_path / "ws", _webhook("ops", f"{rx.url}/ops"))
        state = root / ".splice" / "state.db"
        old = [m for m in MIGRATIONS if m[0] < 7]  # before notifications (migration 7)
        mp = pytest.MonkeyPatch()
        mp.setattr(state_store, "MIGRATIONS", old)
        mp.setattr(state_store, "SCHEMA_VERSION", len(old))
        try:  # an older Splice writes the state; the next tests see today's again whatever happens
            with Workspace.open(root) as ws:
                autonomy.stop(ws.state, ws.config, principal=person("lee"), reason="old news")
        finally:
            mp.undo()
        assert sqlite3.connect(state).execute(
            "SELECT value FROM splice_meta WHERE key='schema_version'"
        ).fetchone()[0] == str(len(old))
        with Workspace.open(root) as ws:
            autonomy.resume(ws.state, ws.config, principal=person("maria"))
            api.notify_pending(ws)
        assert [b["event"] for b in rx.on("/ops")] == ["stop_ended"]


@pytest.mark.parametrize(
    ("notify", "message"),
    [
        (
            'type = "email"\nhost = "h"\nfrom = "a@b"\nto = ["c@d"]\nusername = "u"\npassword = "hunter2"',
            "a password is never written in splice.toml: set password_env",
        ),
        (
            'type = "webhook"\nurl = "http://x"\nevents = ["proposal_waits"]',
            "unknown event 'proposal_waits' (events: incident_opened, proposal_requested",
        ),
        ('type = "webhook"', "needs exactly one of url or url_env"),
        ('type = "email"\nhost = "h"', "email channel 'n' needs sender, to"),
    ],
)
def test_a_wrong_channel_is_a_clear_config_error(tmp_path: Path, notify: str, message: str) -> None:
    root = write_workspace(tmp_path / "ws", f'[[notify]]\nname = "n"\n{notify}\n')
    with pytest.raises(ConfigError, match="splice.toml: notify") as e:
        Workspace.open(root)
    assert message in e.value.message


def test_email_logs_in_with_the_password_from_the_environment(tmp_path: Path) -> None:
    """The SMTP password comes from the variable named by password_env; unset, the send fails
    with that variable named (and the decision stands)."""
    with smtp_server() as mail:
        root = write_workspace(tmp_path / "ws",
            f'[[notify]]\nname = "mail"\ntype = "email"\nhost = "127.0.0.1"\nport = {mail.port}\n'
            'sender = "s@x"\nto = ["m@x"]\nusername = "splice"\npassword_env = "SPLICE_TEST_SMTP_PW"\n')  # fmt: skip
        with Workspace.open(root) as ws:
            autonomy.stop(ws.state, ws.config, principal=person("lee"), reason="close")
            r = api.notify_pending(ws)
        assert r.delivered == 0 and "SPLICE_TEST_SMTP_PW" in r.errors[0]
        assert mail.messages == []
