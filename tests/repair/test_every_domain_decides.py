"""Every domain a repair touches decides (issue 34, item 7). On the demo: the stale-rates repair
reloads pricing's feed, restates pricing's SQLMesh models and rebuilds finance's dbt models, so
an owner of pricing (maria, then sam) and an owner of finance (lee) both approve it."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner
from principals_support import as_principal, person
from record_support import clean_reloads
from test_approval_rules import HOUR, T0

from splice import api
from splice.approvals import auditlog
from splice.approvals.domains import domains_touched
from splice.cli.main import cli, register_commands
from splice.errors import ApprovalError
from splice.repair import approvals, store
from splice.repair.flow import _approve_autonomously, apply, propose
from splice.repair.model import Proposal, Step
from splice.repair.render import proposal_lines
from splice.support.principals import SYSTEM
from splice.workspace.core import Workspace

register_commands()


def _cli(root: Path, *args: str):
    return CliRunner().invoke(cli, ["-w", str(root), *args])


def test_the_stale_rates_repair_waits_for_pricing_and_finance(story_copy: Path) -> None:
    from splice.demo.vendor import set_incident

    set_incident(story_copy, None)  # the vendor has fixed its feed
    with Workspace.open(story_copy) as ws:
        p = propose(ws, "INC-1", principal=as_principal("splice-agent"))
        assert p.status == "pending"
        assert (p.domain, p.domains, p.unowned) == ("pricing", ["pricing", "finance"], [])
        assert "Approvals: an owner of each domain it rewrites: pricing, finance" in \
            proposal_lines(p)  # fmt: skip
        pid = p.proposal_id

    # maria (pricing) alone: it stays pending, finance still has to approve
    r = _cli(story_copy, "approve", pid, "--as", "maria")
    assert r.exit_code == 0, r.output
    assert f"{pid} approved for pricing by maria" in r.output
    assert "it stays pending, waiting for finance (lee)" in r.output
    rows = json.loads(_cli(story_copy, "proposals", "--json").output)
    row = next(x for x in rows if x["proposal_id"] == pid)
    assert row["status"] == "pending"
    assert row["domains"] == ["pricing", "finance"]
    assert row["approved_for"] == {"pricing": ["maria"]}
    assert [(w["domain"], w["owners"]) for w in row["waiting_for"]] == [("finance", ["lee"])]
    listed = _cli(story_copy, "proposals").output
    assert "waiting for: finance (lee)" in " ".join(listed.split())

    with Workspace.open(story_copy) as ws:
        # the other pricing owner adds nothing: pricing has approved already
        with pytest.raises(ApprovalError, match="already approved for the domains sam owns"):
            api.approve(ws, pid, principal=person("sam"))
        # not applied while finance has not approved (finance is at L1: Splice never approves)
        with pytest.raises(ApprovalError, match="domain finance is at L1"):
            apply(ws, pid, principal=person("maria"))
        shown = api.proposal(ws, pid)
        assert shown["status"] == "pending"
        approves = [d for d in shown["decisions"] if d["decision"] == "approve"]
        assert [(d["actor"], d["domains"]) for d in approves] == [("maria", ["pricing"])]

    # lee (finance) approves: now it is approved, and it applies
    r = _cli(story_copy, "approve", pid, "--as", "lee")
    assert r.exit_code == 0, r.output
    assert f"{pid} approved by lee" in r.output
    with Workspace.open(story_copy) as ws:
        done = apply(ws, pid, principal=person("lee"))
        assert done.run.ok and done.proposal.status == "applied"
        assert done.verification is not None and done.verification.passed
        by = [(a["by"], a["domains"]) for a in done.receipt["approved_by"]]
        assert by == [("maria", ["pricing"]), ("lee", ["finance"])]
        assert done.receipt["domains"] == ["pricing", "finance"]
        logged = [e.as_dict()["payload"] for e in auditlog.entries(ws.state, pid)
                  if e.kind == "approve"]  # fmt: skip
        assert [(x["domains"], x.get("waiting"), x["status"]) for x in logged] == [
            (["pricing"], ["finance"], "pending"),
            (["finance"], None, "approved"),
        ]
        assert auditlog.verify(ws.state).intact
    md = _cli(story_copy, "receipt", pid, "--markdown").output
    assert "- Approved by: lee (person, cli-as) at" in md and " for finance" in md


def _two_domain(ws: Workspace, *, change_class: str = "restatement", t0: float = T0,
                by: str = "splice-agent") -> Proposal:  # fmt: skip
    """A pending proposal that rewrites pricing's and finance's relations (the undo itself is
    tested elsewhere), asked for by ``by`` (the agent, or a person)."""
    who = as_principal(by)
    p = Proposal(
        store.new_proposal_id(ws.state), "INC-1", ws.target, "pricing", change_class,  # type: ignore[arg-type]
        "Repair INC-1", "stale rates", date(2026, 9, 28), date(2026, 9, 29),
        [Step("reload", "ingestion", ["ingestion:fx_rates_ingest"], date(2026, 9, 28),
              date(2026, 9, 29), ["python", "ingest.py"]),
         Step("rebuild", "finance", ["finance:fct_gmv_qtd"], None, None, ["dbt", "build"])],
        ["dbt build"], {}, None, who.name, t0, t0 + 4 * HOUR,
        domains=["pricing", "finance"],
    )  # fmt: skip
    store.save(ws.state, p, principal=who, now=t0)

    def requested(cur: Proposal) -> None:
        cur.requested_at = t0

    return store.transition(ws.state, p.proposal_id, "pending", principal=who, now=t0,
                            update=requested)  # fmt: skip


def _owners(root: Path, finance: str, *, pricing_level: str = "L2", finance_level: str = "L1"):
    toml = root / "splice.toml"
    text = toml.read_text().replace('owners = ["lee"]', f"owners = {finance}")
    text = text.replace('autonomy = "L2"', f'autonomy = "{pricing_level}"', 1)
    text = text.replace('autonomy = "L1"', f'autonomy = "{finance_level}"', 1)
    toml.write_text(text)


def test_one_person_owning_both_domains_approves_for_both(fresh_demo: Path) -> None:
    _owners(fresh_demo, '["lee", "maria"]')
    with Workspace.open(fresh_demo) as ws:
        p = _two_domain(ws)
        got = approvals.approve(ws, p.proposal_id, principal=person("maria"), now=T0 + 60)
        assert got.status == "approved"
        d = [x for x in store.decisions(ws.state, p.proposal_id) if x.decision == "approve"]
        assert [(x.actor, x.domains) for x in d] == [("maria", ("pricing", "finance"))]
        # the requester still never approves, for any domain
        q = _two_domain(ws, by="maria")
        with pytest.raises(ApprovalError, match="no one approves their own work"):
            approvals.approve(ws, q.proposal_id, principal=person("maria"), now=T0 + 60)
        # a person who owns neither is told who does
        with pytest.raises(ApprovalError, match=r"rita is not an owner of any domain .* "
                           r"pricing \(maria, sam\); finance \(lee, maria\)"):  # fmt: skip
            approvals.approve(ws, q.proposal_id, principal=person("rita"), now=T0 + 60)


def test_each_waiting_domain_escalates_through_its_own_owners(fresh_demo: Path) -> None:
    _owners(fresh_demo, '["lee", "ana"]')
    with Workspace.open(fresh_demo) as ws:
        p = _two_domain(ws)
        assert approvals.asked(ws, p) == ["maria", "lee"]
        approvals.approve(ws, p.proposal_id, principal=person("lee"), now=T0 + 60)
        later = approvals.refresh(ws, store.load(ws.state, p.proposal_id), now=T0 + 2 * HOUR + 1)
        assert later.status == "pending"
        status = approvals.approval_status(ws, later)
        # finance approved before its escalation fell due; pricing's sam is asked as well
        assert status["approved_for"] == {"finance": ["lee"]}
        assert status["waiting_for"] == [
            {"domain": "pricing", "owners": ["maria", "sam"], "asked": ["maria", "sam"]}
        ]
        esc = [x for x in store.decisions(ws.state, p.proposal_id) if x.decision == "escalate"]
        assert [(x.domains, x.comment) for x in esc] == [
            (("pricing",), "unanswered for 2h: sam is asked as well (after maria) for domain "
                           "pricing"),
        ]  # fmt: skip
        assert approvals.refresh(ws, later, now=T0 + 4 * HOUR + 1).status == "expired"


def _proven(ws: Workspace, domain: str, n: int = 3) -> None:
    """``n`` clean (applied and verified) reload_ingestion applications in ``domain`` (its
    proven record)."""
    clean_reloads(ws, domain, n, at=T0 - 1000)


def test_autonomy_needs_every_touched_domain_to_allow_it(fresh_demo: Path) -> None:
    _owners(fresh_demo, '["lee"]', pricing_level="L3", finance_level="L2")
    with Workspace.open(fresh_demo) as ws:
        _proven(ws, "pricing")
        _proven(ws, "finance")
        p = _two_domain(ws, change_class="reload_ingestion")
        with pytest.raises(ApprovalError, match="domain finance is at L2"):
            _approve_autonomously(ws, p, now=T0 + 1)
        with pytest.raises(ApprovalError, match="Splice may not approve it itself"):
            apply(ws, p.proposal_id, principal=SYSTEM, now=T0 + 1)
        assert store.load(ws.state, p.proposal_id).status == "pending"
        assert "approve" not in [d.decision for d in store.decisions(ws.state, p.proposal_id)]
    toml = fresh_demo / "splice.toml"
    toml.write_text(toml.read_text().replace('autonomy = "L2"', 'autonomy = "L3"'))
    with Workspace.open(fresh_demo) as ws:
        assert [d.autonomy for d in ws.config.domains] == ["L3", "L3"]
        q = _two_domain(ws, change_class="reload_ingestion")
        got = _approve_autonomously(ws, q, now=T0 + 2)
        assert got.status == "approved"
        d = [x for x in store.decisions(ws.state, q.proposal_id) if x.decision == "approve"]
        assert [(x.actor, x.domains) for x in d] == [("splice", ("pricing", "finance"))]


def test_a_node_in_no_domain_is_named_in_the_proposal(fresh_demo: Path) -> None:
    toml = fresh_demo / "splice.toml"
    toml.write_text(toml.read_text().replace('nodes = ["finance:*", "ingestion:bookings_load"]',
                                             'nodes = ["finance:fct_gmv_qtd"]'))  # fmt: skip
    with Workspace.open(fresh_demo) as ws:
        nodes = ["pricing:fx.daily_rates", "finance:fct_gmv_qtd", "finance:fct_gmv_by_channel"]
        doms, unowned = domains_touched(ws.graph(), ws.config, nodes, first=nodes[0])
        assert ([d.name for d in doms], unowned) == (
            ["pricing", "finance"],
            ["finance:fct_gmv_by_channel"],
        )
        p = _two_domain(ws)
        p.unowned = unowned
        text = "\n".join(proposal_lines(p))
        assert "in no domain (nobody approves for them; splice doctor: SPL403): " \
            "finance:fct_gmv_by_channel" in text  # fmt: skip
