"""The demo incident, told to a webhook, Slack and email as the CLI decides: the incident
opening, the proposal waiting for maria, her approval, the repair applied and verified, and an
org-wide stop and its end; each message names the ids, who decided and what to run next."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from notify_support import body_text, http_receiver, smtp_server

from splice.cli.main import cli, register_commands
from splice.demo import relocate
from splice.demo.story import StoryResult

register_commands()


@pytest.fixture(scope="module")
def story(stale_story: StoryResult) -> StoryResult:
    """The session's story up to the diagnosis (read-only: copy it)."""
    return stale_story


def _cli(ws: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["-w", str(ws), *args])


def test_the_demo_repair_is_told_step_by_step(story: StoryResult, tmp_path: Path) -> None:
    from splice.demo.vendor import set_incident

    ws = tmp_path / "travel"
    shutil.copytree(story.build.workspace, ws, symlinks=True)
    relocate(ws)
    set_incident(ws, None)  # the vendor fixed its feed
    inc = story.incidents[0].incident_id
    with http_receiver() as rx, smtp_server() as mail:
        with (ws / "splice.toml").open("a", encoding="utf-8") as f:
            f.write(
                f'\n[[notify]]\nname = "ops"\ntype = "webhook"\nurl = "{rx.url}/ops"\n'
                f'\n[[notify]]\nname = "slack"\ntype = "webhook"\nformat = "slack"\n'
                f'url = "{rx.url}/slack"\n'
                f'\n[[notify]]\nname = "finance"\ntype = "email"\nhost = "127.0.0.1"\n'
                f'port = {mail.port}\nsender = "splice@travel.example"\n'
                f'to = ["finance-oncall@travel.example"]\n'
                f'events = ["repair_verified", "stop_started", "stop_ended"]\n'
            )  # fmt: skip
        r = _cli(ws, "propose", inc, "--as", "splice-agent")
        assert r.exit_code == 0, r.output
        opened, requested = rx.on("/ops")
        assert opened["event"] == "incident_opened" and opened["incident_id"] == inc
        assert opened["next_command"] == f"splice propose {inc}"
        assert opened["details"]["origin"] == "pricing:fx.daily_rates"
        pid = requested["proposal_id"]
        assert requested["event"] == "proposal_requested" and requested["actor"] == "splice-agent"
        assert (requested["target"], requested["incident_id"]) == ("prod", inc)
        assert requested["next_command"] == f"splice approve {pid}"

        assert requested["summary"].startswith(f"Proposal {pid} waits for approval by maria, lee")
        assert _cli(ws, "approve", pid, "--as", "maria").exit_code == 0
        approved = rx.on("/ops")[-1]  # pricing has approved; finance's dbt models still wait
        assert approved["event"] == "proposal_approved" and approved["actor"] == "maria"
        assert approved["summary"].startswith(
            f"Proposal {pid} approved for pricing by maria; it waits for finance"
        )
        assert approved["next_command"] == f"splice approve {pid}"
        assert _cli(ws, "approve", pid, "--as", "lee").exit_code == 0
        approved = rx.on("/ops")[-1]
        assert approved["event"] == "proposal_approved" and approved["actor"] == "lee"
        assert approved["next_command"] == f"splice apply {pid}"

        r = _cli(ws, "apply", pid, "--as", "maria")
        assert r.exit_code == 0, r.output
        verified = rx.on("/ops")[-1]
        assert verified["event"] == "repair_verified" and verified["actor"] == "maria"
        assert verified["summary"].startswith(f"Repair {pid} applied and verified")
        assert verified["next_command"] == f"splice receipt {pid}"

        assert _cli(ws, "stop", "--as", "lee", "--reason", "Q3 close").exit_code == 0
        assert _cli(ws, "resume", "--as", "lee").exit_code == 0
        assert [b["event"] for b in rx.on("/ops")] == [
            "incident_opened", "proposal_requested", "proposal_approved", "proposal_approved",
            "repair_verified", "stop_started", "stop_ended",
        ]  # fmt: skip
        slack = rx.on("/slack")
        assert len(slack) == 7 and all(set(b) == {"text", "blocks"} for b in slack)
        assert f"Incident {inc} opened" in slack[0]["text"]

        subjects = [m["Subject"] for _f, _t, m in mail.messages]
        assert subjects[0].startswith(f"[splice] Repair {pid} applied and verified")
        assert subjects[1:] == ["[splice] Org-wide stop by lee: Q3 close",
                                "[splice] Org-wide stop lifted by lee (stopped by lee)"]  # fmt: skip
        text = body_text(mail.messages[0][2])
        assert f"Proposal: {pid}" in text and "Decided by: maria" in text
        assert f"Next: splice receipt {pid}" in text

    r = _cli(ws, "notify", "status")
    assert "17 delivered, 0 waiting, 0 failed" in r.output, r.output
