"""Decisions committed at once from several threads (a server's requests and its background
sender) keep the witness whole and at the log's head."""

from __future__ import annotations

import threading
from pathlib import Path

from splice import api
from splice.support.principals import Principal


def test_concurrent_commits_leave_the_witness_at_the_logs_head(
    tmp_path: Path, state_target: Path | str
) -> None:
    state = "" if isinstance(state_target, Path) else f'\n[state]\nurl = "{state_target}"\n'
    (tmp_path / "splice.toml").write_text('[workspace]\nname = "team"\n' + state)
    errors: list[BaseException] = []
    admin = Principal.of("admin", kind="person", auth="os-user")

    def mint(i: int) -> None:
        try:
            with api.open_workspace(tmp_path) as ws:
                for j in range(5):
                    api.create_key(ws, name=f"bot{i}-{j}", kind="agent", scopes="read",
                                   principal=admin)  # fmt: skip
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=mint, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with api.open_workspace(tmp_path) as ws:
        report = api.verify_audit_log(ws)
    assert report.intact and report.entries == 30, report
    assert not list(tmp_path.glob(".splice-witness.json.*.tmp"))
