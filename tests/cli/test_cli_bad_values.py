"""Values a user mistypes get one red line and exit 2, never "This is a bug in Splice".

Each runs the CLI in a subprocess, on a workspace that is never written to.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import assert_one_red_error_line, changes, copy_fixture, snapshot, splice


@pytest.fixture
def dbt_project(tmp_path: Path) -> Path:
    return copy_fixture("jaffle_dbt", tmp_path)


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("2026-02-30", "'2026-02-30' is not a valid date: day is out of range for month"),
        ("2026-13-01", "'2026-13-01' is not a valid date: month must be in 1..12"),
        ("yesterday", "'yesterday' is not a valid date"),
        ("9999-12-31", "execution time 9999-12-31 is out of range"),
        ("0001-01-01", "execution time 0001-01-01 is out of range"),
    ],
)
@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_bad_execution_time_is_refused(
    dbt_project: Path, command: str, value: str, needle: str
) -> None:
    before = snapshot(dbt_project)
    res = splice(command, "--execution-time", value, cwd=dbt_project)
    assert_one_red_error_line(res, needle, "YYYY-MM-DD")
    assert changes(before, snapshot(dbt_project), allow_tool_scratch=False) == []


def _workspace(tmp_path: Path, content: bytes | None) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    if content is None:
        (root / "splice.toml").mkdir()
    else:
        (root / "splice.toml").write_bytes(content)
    return root


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        (b"", ["splice.toml is empty", "[[projects]]"]),
        (b"# only a comment\n\n", ["splice.toml is empty"]),
        (b"\xff\xfe[workspace]\n", ["splice.toml: not UTF-8 text", "save splice.toml as UTF-8"]),
        (None, ["splice.toml is a directory, not a file"]),
        (
            b'[warehouse]\ndialect = "duckdbb"\n',
            ["warehouse.dialect: unknown dialect 'duckdbb'", "snowflake"],
        ),
    ],
    ids=["empty", "comments-only", "not-utf8", "a-directory", "unknown-dialect"],
)
def test_a_splice_toml_splice_cannot_use_is_refused(
    tmp_path: Path, content: bytes | None, needles: list[str]
) -> None:
    root = _workspace(tmp_path, content)
    before = snapshot(root)
    res = splice("ls", cwd=root)
    assert_one_red_error_line(res, *needles)
    assert changes(before, snapshot(root), allow_tool_scratch=False) == []


def test_a_known_dialect_is_accepted(tmp_path: Path) -> None:
    from splice.config.workspace import parse_config

    assert parse_config('[warehouse]\ndialect = "snowflake"\n').warehouse.dialect == "snowflake"


def test_runs_limit_must_be_positive(dbt_project: Path) -> None:
    res = splice("runs", "-n", "-1", cwd=dbt_project)
    assert res.returncode == 2
    assert "-1 is not in the range x>=1" in res.stderr
