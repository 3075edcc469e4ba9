"""The hub a long-lived server answers through: one scheduler leader per workspace."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from splice import api


def test_one_process_leads_the_scheduler_and_another_takes_over(tmp_path: Path) -> None:
    (tmp_path / "splice.toml").write_text('[workspace]\nname = "team"\n')
    first, second = api.hub(tmp_path), api.hub(tmp_path)
    try:
        assert first.scheduler_leader() is True
        assert first.scheduler_leader() is True  # it keeps leading
        assert second.scheduler_leader() is False  # a second worker does not run housekeeping
        first.close()  # the leader stops (or dies: the kernel releases the lock)
        assert second.scheduler_leader() is True
    finally:
        first.close()
        second.close()


def test_a_burst_of_requests_hashes_the_workspace_once(
    fresh_demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the graph is due a check, one request hashes the projects' files; the others in
    the same burst are lent the graph meanwhile (fifty callers used to hash it fifty times)."""
    from splice.workspace import graph_cache

    hub = api.hub(fresh_demo, recheck=0.2)
    try:
        with hub.workspace() as ws:
            graph = ws.graph()
        real, keys = graph_cache.graph_inputs, []

        def slow_inputs(w: Any) -> tuple[str, dict[str, Any]]:
            keys.append(threading.get_ident())
            time.sleep(0.3)  # a hash of a big workspace, while the others arrive
            return real(w)

        monkeypatch.setattr(graph_cache, "graph_inputs", slow_inputs)
        time.sleep(0.3)  # the check is due
        start, lent = threading.Barrier(16), []

        def request() -> None:
            start.wait()
            with hub.workspace() as w:
                lent.append(w.graph())

        threads = [threading.Thread(target=request) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(lent) == 16 and all(g is graph for g in lent)  # nothing loaded again
        assert len(keys) == 1, f"{len(keys)} requests hashed the workspace"
    finally:
        hub.close()


def test_a_light_workspace_is_of_the_servers_target_unless_another_is_named(
    tmp_path: Path,
) -> None:
    """The operator's bookkeeping opens light workspaces: of the target the server serves
    (``splice serve --target dev``), not the workspace's default one."""
    from splice.api.served import Hub

    (tmp_path / "splice.toml").write_text(
        '[workspace]\nname = "team"\ndefault_target = "prod"\n\n[targets.dev]\n[targets.prod]\n'
    )
    hub = Hub(tmp_path, target="dev")
    try:
        with hub.workspace(light=True) as ws:
            assert ws.target == "dev"
        with hub.workspace("prod", light=True) as ws:
            assert ws.target == "prod"
    finally:
        hub.close()
