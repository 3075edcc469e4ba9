"""A Spark Connect server of Splice's own on 127.0.0.1, for the tests and a local workspace.

pyspark ships Spark itself; :class:`LocalSpark` starts its ``SparkConnectServer`` with the
machine's Java, ``local[2]``, the Hive catalog kept in a Derby metastore and a warehouse
directory under one base directory (so tables outlive a restart), the web UI off, and both
the driver's bind address and host on loopback. Every client (Splice, dbt-spark's session,
SQLMesh's Spark engine, in any process) reaches the one JVM through ``sc://127.0.0.1:PORT``:
two JVMs on one Derby metastore would fail.

It serves small data (a demo, a test): its queries are interpreted, not compiled to Java
(whole-stage and expression code generation off), which halves the JVM's CPU on a workload
of many small queries, where compiling each query costs more than running it. A server that
lives only as long as its owner (the tests' one, for a session) may keep its catalog in memory
(``catalog="in-memory"``): the Derby metastore costs a quarter of the JVM's CPU there.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from splice.errors import WarehouseError

CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
PID_FILE = "server.pid"


def _port_of(remote: str) -> int:
    """The port of a Spark Connect URL.

    >>> _port_of("sc://127.0.0.1:15099/;session_id=x")
    15099
    """
    from urllib.parse import urlsplit

    return urlsplit(remote.replace("sc://", "http://", 1).split("/;", 1)[0]).port or 15002


def spark_home() -> Path:
    """The Spark that pyspark ships (its ``bin/spark-submit``)."""
    try:
        import pyspark
    except ModuleNotFoundError:
        raise WarehouseError(
            "a local Spark needs pyspark, which is not installed.",
            fix='pip install "splice[spark]"',
        ) from None
    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class LocalSpark:
    base: Path
    port: int = 0
    memory: str = "1g"
    #: ``hive`` (tables outlive a restart) or ``in-memory`` (they live as long as the server)
    catalog: Literal["hive", "in-memory"] = "hive"
    proc: subprocess.Popen[bytes] | None = None

    @property
    def remote(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.base / "connect-server.log"

    def start(self, timeout: float = 120.0) -> LocalSpark:
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise WarehouseError("a local Spark needs Java, and none is on PATH.",
                                 fix="install Java 17 (Debian: apt-get install openjdk-17-jre-headless)")  # fmt: skip
        self.base.mkdir(parents=True, exist_ok=True)
        self.port = self.port or _free_port()
        home = spark_home()
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.sql.catalogImplementation": self.catalog,
            "spark.sql.warehouse.dir": str(self.base / "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={self.base / 'metastore_db'};create=true",
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={self.base}",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.sources.partitionOverwriteMode": "dynamic",
            # small data: interpreted, never compiled (see the module's docstring)
            "spark.sql.codegen.wholeStage": "false",
            "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        }  # fmt: skip
        cmd = [str(home / "bin" / "spark-submit"), "--class", CONNECT_CLASS, "--master", "local[2]",
               "--driver-memory", self.memory]  # fmt: skip
        for k, v in conf.items():
            cmd += ["--conf", f"{k}={v}"]
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     cwd=self.base, start_new_session=True)  # fmt: skip
        log.close()
        (self.base / PID_FILE).write_text(f"{self.proc.pid}\n")
        deadline = time.monotonic() + timeout
        while not _answers(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log_path.read_text(errors="replace").strip().splitlines()[-3:]
                self.stop()
                raise WarehouseError(
                    f"the local Spark Connect server did not start on port {self.port}: "
                    f"{' '.join(tail)} (log: {self.log_path}).",
                    fix="check Java 17 and the log", retry=True,
                )  # fmt: skip
            time.sleep(0.25)
        return self

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    @classmethod
    def ensure_at(cls, base: Path, remote: str) -> bool:
        """Start the server kept in ``base`` on ``remote``'s port unless something answers
        there already (it outlives this process: :meth:`stop_at` stops it); whether it was
        started."""
        port = _port_of(remote)
        if _answers(port):
            return False
        cls(base, port=port).start()
        return True

    @classmethod
    def stop_at(cls, base: Path, remote: str) -> bool:
        """Stop the server a process started in ``base`` (its process group, from the pid file);
        False when none runs."""
        pid_file = base / PID_FILE
        if not pid_file.exists():
            return False
        pid = int(pid_file.read_text().strip() or 0)
        pid_file.unlink(missing_ok=True)
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            return False
        deadline = time.monotonic() + 30
        while _answers(_port_of(remote)) and time.monotonic() < deadline:
            time.sleep(0.25)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        return True

    def drop_schemas(self) -> list[str]:
        """Drop every schema but ``default``, with its tables (a test's clean slate)."""
        from pyspark.sql import SparkSession
        from sqlglot import exp

        session = SparkSession.builder.remote(self.remote).create()
        try:
            names = [r[0] for r in session.sql("SHOW DATABASES").collect() if r[0] != "default"]
            for name in names:
                drop = exp.Drop(this=exp.to_identifier(name, quoted=True), kind="SCHEMA",
                                exists=True, cascade=True)  # fmt: skip
                session.sql(drop.sql(dialect="spark")).collect()
        finally:
            session.stop()
        return names

    def __enter__(self) -> LocalSpark:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def ensure(root: Any, wh: Any) -> None:
    """Start the workspace's own Spark Connect server (``[warehouse] local``: its base
    directory in the workspace) on ``[warehouse] remote`` when nothing answers there."""
    if LocalSpark.ensure_at(Path(root) / wh.local, str(wh.remote)):
        from splice.support.procs import announce_started

        announce_started(f"a local Spark Connect server on {wh.remote}", root)
