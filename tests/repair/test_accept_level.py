"""Accepting an incident's new level, on the real stale-rates story (INC-1 open, its origin
pricing:fx.daily_rates in domain pricing, owned by maria then sam): the levels written per series
from where each series' fault started, the incident closed, the audit log intact and naming the
principal; and everyone else refused with nothing written."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.notify.notify_support import http_receiver
from tests.repair.principals_support import agent, person

from splice import api
from splice.approvals import auditlog
from splice.cli.main import cli, register_commands
from splice.errors import AccessError, ApprovalError, InputError
from splice.repair import store
from splice.repair.model import Proposal, Step
from splice.support.principals import Principal
from splice.workspace.core import Workspace

register_commands()


def _cli(ws: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["-w", str(ws), *args])


def _policy(root: Path, **settings: str) -> None:
    """Set [policy] keys in the workspace's splice.toml (the demo's section is last)."""
    toml = root / "splice.toml"
    text = toml.read_text().replace("allow_as = true\n", "")
    toml.write_text(text + "".join(f"{k} = {v}\n" for k, v in settings.items()))


def _written(root: Path) -> tuple[int, int, str]:
    """(accepted levels, audit-log entries, INC-1's status): what a refusal must not change."""
    con = sqlite3.connect(root / ".splice" / "state.db")
    try:
        return (
            con.execute("SELECT count(*) FROM watch_levels").fetchone()[0],
            con.execute("SELECT count(*) FROM repair_audit_log").fetchone()[0],
            con.execute("SELECT status FROM incidents WHERE incident_id = 'INC-1'").fetchone()[0],
        )
    finally:
        con.close()


def _expected_starts(root: Path) -> dict[int, str]:
    """Where each series of INC-1 went wrong, read straight from the stored anomalies: the
    earliest ``since`` a detector reported, else the first anomalous interval."""
    con = sqlite3.connect(root / ".splice" / "state.db")
    out: dict[int, list[str]] = {}
    firsts: dict[int, str] = {}
    for sid, interval, data in con.execute(
        "SELECT series_id, interval_start, data FROM watch_anomalies WHERE incident_id = 'INC-1'"
    ):
        firsts[sid] = min(firsts.get(sid, interval), interval)
        since = json.loads(data or "{}").get("since")
        if since:
            out.setdefault(sid, []).append(since)
    con.close()
    return {sid: min(out[sid]) if sid in out else first for sid, first in firsts.items()}


def _levels(root: Path) -> dict[int, tuple[str, str, str, str, str | None]]:
    con = sqlite3.connect(root / ".splice" / "state.db")
    try:
        rows = con.execute(
            "SELECT series_id, since, how, accepted_by, principal_auth, note FROM watch_levels "
            "WHERE incident_id = 'INC-1'"
        ).fetchall()
    finally:
        con.close()
    return {r[0]: tuple(r[1:]) for r in rows}  # type: ignore[misc]


def test_an_owner_accepts_every_series_from_where_its_fault_started(story_copy: Path) -> None:
    # one series' detector reported that its fault started before its first flagged interval
    # (a level that moved on Friday, flagged from Monday): its level starts on Friday
    con = sqlite3.connect(story_copy / ".splice" / "state.db")
    jpy = con.execute(
        "SELECT s.series_id FROM watch_series s WHERE s.metric = 'fx_rate' "
        'AND s.dims = \'{"currency":"JPY"}\''
    ).fetchone()[0]
    con.execute(
        "UPDATE watch_anomalies SET data = json_set(data, '$.since', '2026-09-25') "
        "WHERE series_id = ? AND incident_id = 'INC-1'",
        (jpy,),
    )
    con.commit()
    con.close()
    expected = _expected_starts(story_copy)
    # 29 rates (fx_rate), 30 as-of lags of the rates, 1 of the bookings: each series once
    assert expected[jpy] == "2026-09-25" and len(expected) == 60
    # every other series' level starts where its detector says its fault started
    assert all(d <= "2026-09-28" for d in expected.values())
    assert sorted(set(expected.values())) == ["2026-09-25", "2026-09-28"]

    with Workspace.open(story_copy) as ws:
        _, raw = api.create_key(ws, name="Maria", kind="person", scopes="read,propose,approve")
        maria = api.authenticate_key(ws, raw)  # as splice serve would know her
        assert api.incident_options(ws, "INC-1", maria) == {"accept_level": None}
        r = api.accept_level(ws, "inc-1", principal=maria, note="  the ECB really moved  ")
        assert r.status == "accepted" and r.remaining == [] and r.levels == len(expected)
        assert r.note == "the ECB really moved"
        inc = api.incident(ws, "INC-1")
        assert inc.status == "accepted" and inc.resolved_at is not None
        assert inc.resolution.startswith(
            "new level accepted by Maria (person, signed in with an API key "
        )
        assert "the ECB really moved" in inc.resolution
        # the audit log verifies, against the witness too, and its last entry is the decision
        report = api.verify_audit_log(ws)
        assert report.intact and report.entries == r.audit_seq
        last = api.audit_entries(ws)[-1].as_dict()
        assert (last["kind"], last["actor"], last["proposal_id"]) == ("accept-level", "Maria", None)
        assert last["payload"]["principal"]["auth"] == "api-key"
        assert last["payload"]["principal"]["credential"] == maria.credential
        assert last["payload"]["incident_id"] == "INC-1"
        assert len(last["payload"]["series"]) == len(expected)
        # the page's and the CLI's reading of it
        shown = api.incident_levels(ws, "INC-1")
        assert shown["open"] == [] and len(shown["levels"]) == len(expected)
        assert any(x["series"] == "currency=JPY" and x["since"] == "2026-09-25"
                   for x in shown["levels"])  # fmt: skip
        assert "accepted" in {i.status for i in api.list_incidents(ws, status=None)}
        assert api.list_incidents(ws) == []  # no open incident left
    levels = _levels(story_copy)
    assert {sid: v[0] for sid, v in levels.items()} == expected
    assert {v[1:4] for v in levels.values()} == {("accepted", "Maria", "api-key")}

    # a second accept is a clear error, and writes nothing
    before = _written(story_copy)
    r2 = _cli(story_copy, "incident", "accept-level", "INC-1", "--as", "sam")
    assert r2.exit_code == 2, r2.output
    assert "INC-1 is closed already: new level accepted by Maria" in r2.output
    assert "Traceback" not in r2.output
    assert _written(story_copy) == before


@pytest.mark.parametrize(
    ("who", "error", "words"),
    [
        (agent("claude", scopes="read,propose,approve"), AccessError, "an agent never decides"),
        (person("lee"), ApprovalError,
         "lee may not accept the new level of INC-1: only an owner of domain pricing"),
        (person("rita", auth="api-key", scopes="read"), AccessError,
         "that needs the 'approve' scope"),
        (person("splice"), AccessError, "a person decides under their own name"),
    ],
)  # fmt: skip
def test_everyone_but_an_owner_is_refused_and_nothing_is_written(
    story_copy: Path, who: Principal, error: type, words: str
) -> None:
    toml = story_copy / "splice.toml"  # the agent is even listed as an owner of pricing
    toml.write_text(toml.read_text().replace('owners = ["maria", "sam"]',
                                             'owners = ["maria", "sam", "claude"]'))  # fmt: skip
    before = _written(story_copy)
    with Workspace.open(story_copy) as ws:
        assert api.incident_options(ws, "INC-1", who)["accept_level"]
        with pytest.raises(error, match=words):
            api.accept_level(ws, "INC-1", principal=who)
    assert _written(story_copy) == before == (0, before[1], "open")


def test_a_read_only_key_is_refused_as_the_server_would_know_it(story_copy: Path) -> None:
    with Workspace.open(story_copy) as ws:
        _, raw = api.create_key(ws, name="rita", kind="person", scopes="read")
        rita = api.authenticate_key(ws, raw)
        before = _written(story_copy)
        with pytest.raises(AccessError, match=r"rita \(person, api-key\) may not accept-level"):
            api.accept_level(ws, "INC-1", principal=rita)
    assert _written(story_copy) == before


def test_the_cli_narrows_to_a_series_and_the_rest_stays_open(story_copy: Path) -> None:
    with http_receiver() as rx:
        with (story_copy / "splice.toml").open("a") as f:
            f.write(f'\n[[notify]]\nname = "ops"\ntype = "webhook"\nurl = "{rx.url}/ops"\n'
                    'events = ["level_accepted"]\n')  # fmt: skip
        r = _cli(story_copy, "incident", "accept-level", "INC-1", "--as", "MARIA ",
                 "--series", "currency=jpy", "--note", "BoJ intervened", "--json")  # fmt: skip
        assert r.exit_code == 0, r.output
        got = json.loads(r.output)
        assert got["status"] == "open" and got["principal"]["name"] == "MARIA"
        assert {(a["metric"], a["series"]) for a in got["accepted"]} == {
            ("fx_rate", "currency=JPY"),
            ("pricing:fx.daily_rates/lag_days(as_of)", "currency=JPY"),
        }
        assert all(a["since"] == "2026-09-28" for a in got["accepted"])
        assert len(got["remaining"]) > 50
        assert _written(story_copy)[0] == 2 and _written(story_copy)[2] == "open"
        # the channel heard of it, in words
        deadline = time.time() + 10
        while not rx.on("/ops") and time.time() < deadline:
            time.sleep(0.1)
        (msg,) = rx.on("/ops")
        assert msg["event"] == "level_accepted" and msg["actor"] == "MARIA"
        assert msg["summary"] == (
            "Incident INC-1: new level of 2 series accepted by MARIA from 2026-09-28; "
            f"{len(got['remaining'])} series stay open"
        )
        assert msg["incident_id"] == "INC-1" and msg["next_command"] == "splice incident show INC-1"

    # the same series again, or one the incident does not have: refused, nothing written
    before = _written(story_copy)
    again = _cli(story_copy, "incident", "accept-level", "INC-1", "--as", "sam",
                 "--series", "currency=JPY")  # fmt: skip
    assert again.exit_code == 2 and "was already accepted (by MARIA)" in again.output
    unknown = _cli(story_copy, "incident", "accept-level", "INC-1", "--as", "sam",
                   "--series", "currency=XXX")  # fmt: skip
    assert unknown.exit_code == 2 and "names no series of this incident" in unknown.output
    assert "currency=AUD" in unknown.output  # the fix lists what there is
    assert _written(story_copy) == before

    # the rest, by the other owner: the incident closes
    done = _cli(story_copy, "incident", "accept-level", "INC-1", "--as", "sam")
    assert done.exit_code == 0, done.output
    assert "INC-1 is closed (accepted)" in done.output
    assert "accepted by sam (person, cli-as)" in done.output
    levels = _levels(story_copy)
    assert len(levels) == len(_expected_starts(story_copy))
    assert {v[2] for v in levels.values()} == {"MARIA", "sam"}
    shown = _cli(story_copy, "incident", "show", "INC-1")
    assert "[accepted]" in shown.output and "accepted by sam" in shown.output
    listed = _cli(story_copy, "incidents", "--all", "--json")
    assert [i["status"] for i in json.loads(listed.output)] == ["accepted"]
    log = _cli(story_copy, "audit-log", "show")
    assert "accept-level MARIA (person, cli-as) INC-1" in log.output
    assert _cli(story_copy, "audit-log", "verify").exit_code == 0


def test_the_cli_is_refused_when_decisions_are_made_on_the_server(story_copy: Path) -> None:
    _policy(story_copy, allow_as="true", decisions='"server"')
    before = _written(story_copy)
    for args in (["--as", "maria"], []):
        r = _cli(story_copy, "incident", "accept-level", "INC-1", *args)
        assert r.exit_code == 2, r.output
        assert '[policy] decisions = "server": accept-level is decided only through' in r.output
        assert "Traceback" not in r.output
    assert _written(story_copy) == before


def test_a_repair_under_way_holds_the_decision_back(story_copy: Path) -> None:
    with Workspace.open(story_copy) as ws:
        by = agent()
        p = Proposal(
            store.new_proposal_id(ws.state), "INC-1", ws.target, "pricing", "restatement",
            "Repair INC-1", "stale rates", date(2026, 9, 28), date(2026, 9, 29),
            [Step("restate", "pricing", ["pricing:fx.daily_rates"], date(2026, 9, 28),
                  date(2026, 9, 29), ["sqlmesh", "plan"])], [], {}, None, by.name,
            time.time(), time.time() + 3600,
        )  # fmt: skip
        store.save(ws.state, p, principal=by)
        store.transition(ws.state, p.proposal_id, "pending", principal=by)
        maria = person("maria")
        assert "has repair PR-1 under way (pending)" in str(
            api.incident_options(ws, "INC-1", maria)["accept_level"]
        )
        with pytest.raises(ApprovalError, match="a repair and a new normal exclude each other"):
            api.accept_level(ws, "INC-1", principal=maria)
        assert _written(story_copy)[0] == 0
        api.reject(ws, p.proposal_id, principal=maria, reason="the level is real")
        with pytest.raises(InputError, match="names no series"):
            api.accept_level(ws, "INC-1", principal=maria, series=["nope"])
        assert api.accept_level(ws, "INC-1", principal=maria).status == "accepted"
        assert auditlog.verify(ws.state).intact


def test_an_org_wide_stop_holds_the_decision_back_until_resume(story_copy: Path) -> None:
    stop = _cli(story_copy, "stop", "--as", "lee", "--reason", "quarter close")
    assert stop.exit_code == 0, stop.output
    before = _written(story_copy)
    with Workspace.open(story_copy) as ws:
        why = api.incident_options(ws, "INC-1", person("maria"))["accept_level"]
        assert why and "org-wide stop is active" in why
    r = _cli(story_copy, "incident", "accept-level", "INC-1", "--as", "maria")
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output
    assert "an org-wide stop is active since" in lines[0]
    assert "(lee: 'quarter close'); nothing is accepted until it is lifted." in lines[0]
    assert "Fix: a domain owner runs splice resume" in lines[0]
    assert _written(story_copy) == before  # nothing written: no level, no log entry
    resumed = _cli(story_copy, "resume", "--as", "sam")
    assert resumed.exit_code == 0, resumed.output
    done = _cli(story_copy, "incident", "accept-level", "INC-1", "--as", "maria")
    assert done.exit_code == 0, done.output
    assert "INC-1 is closed (accepted)" in done.output
