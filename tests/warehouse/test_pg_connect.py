"""Splice's own connection to a PostgreSQL warehouse: a real server on 127.0.0.1, and each
bad setting a one-line error that names it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.pg_support import PG_PASSWORD

from splice.errors import WarehouseError
from splice.warehouse.connect import connect
from splice.warehouse.postgres.local_server import LocalPostgres
from splice.workspace.core import Workspace


def _workspace(tmp_path: Path, warehouse: str) -> Path:
    (tmp_path / "splice.toml").write_text(f'[workspace]\nname = "w"\n\n[warehouse]\n{warehouse}\n')
    return tmp_path


def _url_parts(pg: LocalPostgres) -> str:
    return f'type = "postgres"\nhost = "127.0.0.1"\nport = {pg.port}\nuser = "splice"\n'


def test_connects_with_the_password_from_the_environment(
    pg_server: LocalPostgres, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = pg_url.rsplit("/", 1)[1]
    monkeypatch.setenv("WH_PW", PG_PASSWORD)
    root = _workspace(
        tmp_path, _url_parts(pg_server) + f'database = "{db}"\npassword_env = "WH_PW"'
    )
    with Workspace.open(root) as ws:
        assert ws.default_catalog == db
        with connect(ws, "a test") as con:
            assert con.execute("SELECT current_database()").fetchone() == (db,)


@pytest.mark.parametrize(
    "setting, env, expect",
    [
        ('database = "{db}"\npassword_env = "WH_PW"', "wrong", "refused the password in $WH_PW"),
        (
            'database = "no_such_db"\npassword_env = "WH_PW"',
            PG_PASSWORD,
            "has no database 'no_such_db'",
        ),
        ('database = "{db}"\npassword_env = "WH_UNSET"', None, "WH_UNSET, which is not set"),
    ],
)
def test_bad_settings_are_named(
    pg_server: LocalPostgres, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    setting: str, env: str | None, expect: str,
) -> None:  # fmt: skip
    db = pg_url.rsplit("/", 1)[1]
    monkeypatch.delenv("WH_UNSET", raising=False)
    if env is not None:
        monkeypatch.setenv("WH_PW", env)
    root = _workspace(tmp_path, _url_parts(pg_server) + setting.format(db=db))
    with Workspace.open(root) as ws, pytest.raises(WarehouseError) as err, connect(ws, "a test"):
        pass
    assert expect in err.value.one_line()


def test_unreachable_server_says_a_retry_may_help(tmp_path: Path) -> None:
    from splice.warehouse.postgres.local_server import free_port

    root = _workspace(
        tmp_path, f'type = "postgres"\nurl = "postgresql://splice@127.0.0.1:{free_port()}/wh"'
    )
    with Workspace.open(root) as ws, pytest.raises(WarehouseError) as err, connect(ws, "a test"):
        pass
    line = err.value.one_line()
    assert "cannot reach PostgreSQL at 127.0.0.1" in line and "[warehouse] url" in line
    assert err.value.retry


def test_duckdb_warehouse_with_postgres_keys_is_a_config_error(tmp_path: Path) -> None:
    root = _workspace(tmp_path, 'type = "duckdb"\nurl = "postgresql://x@h/db"')
    r = subprocess.run([sys.executable, "-m", "splice", "--workspace", str(root), "ls"],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "url" in r.stderr and "postgres" in r.stderr
