"""The hub a long-lived server answers through: one scheduler leader per workspace."""

from __future__ import annotations

from pathlib import Path

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
