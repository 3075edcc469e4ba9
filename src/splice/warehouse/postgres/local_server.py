"""A throwaway PostgreSQL server on this machine, started and stopped by Splice.

Used by ``splice demo --warehouse postgres`` when no server URL is given, and by the tests.
The server is the machine's own PostgreSQL (``initdb``/``pg_ctl`` of the newest version under
``/usr/lib/postgresql``, or the ``bin`` directory of ``pg_config`` on PATH, or
``$SPLICE_PG_BINDIR``). It listens on 127.0.0.1 only; PostgreSQL refuses to run as root, so
as root it runs as the ``postgres`` user, owning its data directory.

>>> find_bindir() is None or (find_bindir() / "initdb").exists()
True
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice.errors import WarehouseError

#: the superuser a local server is made with
LOCAL_USER = "splice"


def find_bindir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are, or None when this machine has no PostgreSQL."""
    env = os.environ.get("SPLICE_PG_BINDIR")
    candidates: list[Path] = [Path(env)] if env else []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            if out:
                candidates.append(Path(out))
        except (OSError, subprocess.SubprocessError):
            pass
    root = Path("/usr/lib/postgresql")
    if root.is_dir():
        versions = sorted(
            (p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name), reverse=True
        )
        candidates += [v / "bin" for v in versions]
    for c in candidates:
        if (c / "initdb").exists() and (c / "pg_ctl").exists():
            return c
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user() -> list[str]:
    """The command prefix that runs PostgreSQL's programs as a user it accepts."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    import pwd

    try:
        pwd.getpwnam("postgres")
    except KeyError:
        runuser = None
    if runuser is None:
        raise WarehouseError(
            "PostgreSQL will not run as root, and there is no `postgres` user (or no runuser) "
            "to run it as.",
            fix="run Splice as an ordinary user, or give a server's URL (--warehouse-url)",
        )
    return [runuser, "-u", "postgres", "--"]


@dataclass
class LocalPostgres:
    """A PostgreSQL server whose data lives in ``data_dir`` (created by :meth:`init`).

    ``password``: when given, TCP connections must present it (scram-sha-256); otherwise a
    connection from 127.0.0.1 is trusted.
    """

    data_dir: Path
    port: int = 0
    password: str | None = None
    user: str = LOCAL_USER

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    def url(self, database: str = "postgres", *, with_password: bool = True) -> str:
        auth = self.user
        if self.password and with_password:
            auth += f":{self.password}"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def _run(self, args: list[str], what: str, timeout: float = 120) -> None:
        bindir = find_bindir()
        if bindir is None:
            raise WarehouseError(
                "no PostgreSQL server programs (initdb, pg_ctl) on this machine.",
                fix="install PostgreSQL (Debian: apt-get install postgresql) or give a server's "
                "URL (--warehouse-url); SPLICE_PG_BINDIR may name the directory of pg_ctl",
            )
        cmd = [*_as_server_user(), str(bindir / args[0]), *args[1:]]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise WarehouseError(
                f"{what} did not finish in {timeout:.0f} s (log: {self.log_path}).", retry=True
            ) from None
        if r.returncode != 0:
            detail = (r.stderr or r.stdout).strip().splitlines()[-3:]
            raise WarehouseError(
                f"{what} failed: {' '.join(detail)} (log: {self.log_path}).",
                fix="read the log; a stale server of this directory may still run",
            )

    def _chown(self, path: Path) -> None:
        if os.geteuid() == 0:
            import pwd

            pw = pwd.getpwnam("postgres")
            os.chown(path, pw.pw_uid, pw.pw_gid)

    def _reachable(self) -> None:
        """As root, let the ``postgres`` user pass through the directories above the data
        (the execute bit only: nothing becomes readable)."""
        if os.geteuid() != 0:
            return
        for parent in self.data_dir.resolve().parents:
            mode = parent.stat().st_mode
            if not mode & 0o001:
                parent.chmod(mode | 0o001)

    @property
    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def init(self) -> None:
        """Make the data directory (a new cluster); a no-op when it already holds one."""
        if self.initialised:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)
        self._reachable()
        self._chown(self.data_dir)
        args = ["initdb", "-D", str(self.data_dir), "-U", self.user, "--no-sync", "-E", "UTF8"]
        args += ["--auth-local=trust"]
        if self.password:
            pwfile = self.data_dir.parent / f".{self.data_dir.name}.pw"
            pwfile.write_text(self.password + "\n")
            self._chown(pwfile)
            args += ["--auth-host=scram-sha-256", f"--pwfile={pwfile}"]
        else:
            args += ["--auth-host=trust"]
        try:
            self._run(args, f"initdb of {self.data_dir}")
        finally:
            if self.password:
                (self.data_dir.parent / f".{self.data_dir.name}.pw").unlink(missing_ok=True)

    @property
    def running(self) -> bool:
        return (self.data_dir / "postmaster.pid").exists()

    def start(self) -> LocalPostgres:
        """Initialise (when new) and start the server on 127.0.0.1 (a free port when 0)."""
        self.init()
        self._reachable()
        if not self.port:
            self.port = free_port()
        self.log_path.touch()
        self._chown(self.log_path)
        # the Unix socket in the data directory when its path fits the kernel's 107 bytes
        # (a deep workspace does not); Splice and the tools connect over TCP either way
        socket_path = f"{self.data_dir}/.s.PGSQL.{self.port}"
        sockets = str(self.data_dir) if len(socket_path) <= 107 else "''"
        opts = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {sockets} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
            "-c client_connection_check_interval=1000"
        )
        self._run(
            [
                "pg_ctl",
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log_path),
                "-w",
                "-o",
                opts,
                "start",
            ],  # fmt: skip
            f"starting PostgreSQL in {self.data_dir}",
        )
        return self

    def stop(self) -> None:
        """Stop the server (fast: open sessions are ended); a no-op when it is not running."""
        if not self.running:
            return
        self._reachable()  # a directory above may have lost its execute bit since the start
        self._run(
            ["pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop"],
            f"stopping PostgreSQL in {self.data_dir}",
        )

    def create_database(self, name: str) -> str:
        """Create database ``name`` (when missing) and return its URL."""
        import psycopg
        from sqlglot import exp

        with psycopg.connect(self.url("postgres"), autocommit=True) as con:
            exists = con.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if not exists:
                create = exp.Create(
                    this=exp.Table(this=exp.to_identifier(name, quoted=True)), kind="DATABASE"
                )
                con.execute(create.sql("postgres").encode())
        return self.url(name)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def ensure(root: Any, wh: Any) -> None:
    """Start the workspace's own PostgreSQL (``[warehouse] local``: a data directory in the
    workspace) when it is not running; the tools and Splice then find it on ``port``."""
    data = Path(root) / wh.local
    if not (data / "PG_VERSION").exists():
        raise WarehouseError(
            f"[warehouse] local = {wh.local!r}: {data} holds no PostgreSQL data directory.",
            fix="rebuild the workspace (splice demo DIR --warehouse postgres --force), or point "
            "[warehouse] at a server (url)",
        )
    server = LocalPostgres(data, port=int(wh.port or 5432))
    if not server.running:
        server.start()
        from splice.support.procs import announce_started

        announce_started(
            f"a local PostgreSQL on 127.0.0.1:{server.port} (data in {wh.local})", root
        )
