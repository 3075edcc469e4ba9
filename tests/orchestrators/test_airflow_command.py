"""Where Splice looks for the `airflow` command, and the one line it gives when there is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice.errors import OrchestratorError
from splice.orchestrators.airflow_local import airflow_command


def test_no_airflow_command_is_one_line_saying_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "bin" / "airflow"
    monkeypatch.setenv("SPLICE_AIRFLOW", str(missing))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("sys.prefix", str(tmp_path / "venv"))  # no .venv-airflow beside it
    with pytest.raises(OrchestratorError) as e:
        airflow_command()
    text = e.value.one_line()
    assert "no such command was found" in text
    assert f"$SPLICE_AIRFLOW={missing}" in text and "on PATH" in text
    assert str(tmp_path / ".venv-airflow" / "bin") in text  # where `make airflow` puts it
    assert "make airflow" in text


def test_splice_airflow_names_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cmd = tmp_path / "airflow"
    cmd.write_text("#!/bin/sh\n")
    cmd.chmod(0o755)
    monkeypatch.setenv("SPLICE_AIRFLOW", str(cmd))
    assert airflow_command() == cmd
