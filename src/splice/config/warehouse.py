"""``[warehouse]`` in splice.toml: where the projects write, and the SQL dialect Splice speaks there."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator, model_validator

from splice.config.base import Strict


class WarehouseSection(Strict):
    """``[warehouse]``: where the projects write. DuckDB (a file, the default), PostgreSQL
    (a server: ``url``, or ``host``/``port``/``user``/``database``, the password always from the
    environment variable named by ``password_env``; or ``local``, a data directory in the
    workspace whose server Splice starts itself), or Apache Spark (``remote``, its Spark
    Connect endpoint ``sc://HOST:PORT``).

    >>> w = WarehouseSection(type="postgres", url="postgresql://me@db:5433/wh")
    >>> (w.dialect, w.pg_fields()["port"], w.pg_fields()["database"])
    ('postgres', 5433, 'wh')
    """

    type: Literal["duckdb", "postgres", "spark"] = "duckdb"
    path: str = "warehouse.duckdb"
    dialect: str = ""
    # Apache Spark: a Spark Connect endpoint (sc://HOST:PORT)
    remote: str | None = None
    # PostgreSQL
    url: str | None = None
    host: str | None = None
    port: int | None = None
    user: str | None = None
    database: str | None = None
    password_env: str | None = None
    # a data directory (relative to the workspace) of a server Splice starts itself: PostgreSQL,
    # or a Spark Connect server (on remote's port)
    local: str | None = None

    @model_validator(mode="after")
    def _by_type(self) -> WarehouseSection:
        if not self.dialect:
            self.dialect = self.type if self.type in ("postgres", "spark") else "duckdb"
        pg_keys = [k for k in ("url", "host", "port", "user", "database", "password_env",
                               "local") if getattr(self, k) is not None]  # fmt: skip
        if self.remote is not None and self.type != "spark":
            raise ValueError('remote belongs to a Spark warehouse: set type = "spark" or remove it')
        if self.type == "spark":
            pg_keys = [k for k in pg_keys if k != "local"]  # a server Splice starts: both
            if pg_keys:
                raise ValueError(f'{", ".join(pg_keys)} belong to a PostgreSQL warehouse; a Spark '
                                 'warehouse takes remote = "sc://HOST:PORT"')  # fmt: skip
            scheme = (self.remote or "").split("://", 1)[0].lower()
            if scheme in ("thrift", "hive", "hive2", "jdbc:hive2", "http", "https"):
                raise ValueError(
                    f"remote = {self.remote!r} is a Thrift (HiveServer2) or HTTP endpoint; Splice "
                    "reaches Spark through Spark Connect only: start a Spark Connect server "
                    "beside it (sbin/start-connect-server.sh, Spark 3.4 or later) and set "
                    'remote = "sc://HOST:15002"'
                )
            if not (self.remote and self.remote.startswith("sc://")):
                raise ValueError('a Spark warehouse needs remote = "sc://HOST:PORT" (its Spark '
                                 "Connect endpoint)")  # fmt: skip
        if self.type == "duckdb" and pg_keys:
            raise ValueError(
                f'{", ".join(pg_keys)} belong to a PostgreSQL warehouse: set type = "postgres" '
                "or remove them"
            )
        if self.type == "postgres":
            if self.url and self.url.split("://", 1)[0].split("+", 1)[0] not in (
                "postgresql", "postgres"):  # fmt: skip
                raise ValueError(f"url {self.url!r} is not a postgresql:// URL")
            if self.url and (self.host or self.port or self.user or self.database):
                raise ValueError("give either url or host/port/user/database, not both")
            if not (self.url or self.host or self.local):
                raise ValueError("a PostgreSQL warehouse needs url, host or local")
        return self

    def pg_fields(self) -> dict[str, Any]:
        """host, port, user, database of a PostgreSQL warehouse (from ``url`` or the fields;
        the password is not among them: see :func:`splice.warehouse.postgres.connect.conninfo`)."""
        if self.url:
            from urllib.parse import unquote, urlsplit

            u = urlsplit(self.url)
            return {
                "host": u.hostname or "127.0.0.1",
                "port": u.port or 5432,
                "user": unquote(u.username) if u.username else None,
                "database": (u.path or "/").lstrip("/") or None,
                "url_password": unquote(u.password) if u.password else None,
            }
        return {
            "host": self.host or "127.0.0.1",
            "port": self.port or 5432,
            "user": self.user,
            "database": self.database,
            "url_password": None,
        }

    @field_validator("dialect")
    @classmethod
    def _known_dialect(cls, v: str) -> str:
        return known_dialect(v)


def known_dialect(v: str) -> str:
    """A dialect sqlglot knows (imported only when it is not the default)."""
    if v in ("duckdb", "postgres", ""):
        return v
    from sqlglot.dialects.dialect import Dialect

    try:
        Dialect.get_or_raise(v)
    except ValueError:
        from sqlglot.dialects import DIALECTS

        known = ", ".join(sorted(d.lower() for d in DIALECTS))
        raise ValueError(f"unknown dialect {v!r} (sqlglot knows: {known})") from None
    return v
