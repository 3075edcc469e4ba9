"""Child processes of a run (an ingestion reload, a command job) belong to the run.

Each child starts in a process group of its own, asks the kernel to kill it when its parent
dies (Linux ``PR_SET_PDEATHSIG``), and is recorded under ``.splice/locks/children/`` while it
runs, so that whoever takes over a dead run's lock kills what is left of it
(:func:`kill_orphans`) before anything else touches the warehouse.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from splice.support.procs import pid_alive

_PR_SET_PDEATHSIG = 1


#: Runs first in the child: asks the kernel for SIGKILL when the parent dies (Linux
#: ``PR_SET_PDEATHSIG``, kept across exec), then becomes the job. A trampoline rather than a
#: ``preexec_fn``, which is not safe in a process that runs threads (dbt and SQLMesh do).
_TRAMPOLINE = (
    "import ctypes, os, sys\n"
    "try:\n"
    "    ctypes.CDLL('libc.so.6', use_errno=True).prctl(1, 9)\n"
    "except Exception:\n"
    "    pass\n"
    "if os.getppid() == int(sys.argv[1]):\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "sys.exit('the run that started this job is gone')\n"
)


def _argv(argv: list[str]) -> list[str]:
    """``argv`` behind the trampoline on Linux; as it is elsewhere."""
    if not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, "-c", _TRAMPOLINE, str(os.getpid()), *argv]


def run_child(argv: list[str], *, cwd: Path, splice_dir: Path, timeout: float) -> tuple[str, int]:
    """Run ``argv`` as a child of this run; returns (its output, its exit code)."""
    registry = splice_dir / "locks" / "children"
    registry.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(  # noqa: S603 - the job's own command, as declared in splice.toml
        _argv(argv),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: killed as one on takeover
    )
    mark = registry / f"{proc.pid}.json"
    mark.write_text(json.dumps({"pid": proc.pid, "pgid": proc.pid, "parent": os.getpid(),
                                "argv": argv}))  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out or "", proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        return (out or "") + f"\n(killed after {timeout:.0f} s)", -1
    except BaseException:
        _kill_group(proc.pid)
        raise
    finally:
        mark.unlink(missing_ok=True)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def remote_run(splice_dir: Path, run: Any, *, url: str, ingestion: str) -> Path:
    """Record a run queued in an orchestrator on this run's behalf (removed when it ends)."""
    registry = splice_dir / "locks" / "children"
    registry.mkdir(parents=True, exist_ok=True)
    mark = registry / f"{run.system}-{run.run_id}.json"
    mark.write_text(json.dumps({"orchestrator": run.system, "run_id": run.run_id, "url": url,
                                "ingestion": ingestion, "parent": os.getpid()}))  # fmt: skip
    return mark


def spark_session_mark(splice_dir: Path, remote: str, session_id: str) -> Path:
    """Record this run's Spark Connect session (removed when the run ends)."""
    registry = splice_dir / "locks" / "children"
    registry.mkdir(parents=True, exist_ok=True)
    mark = registry / f"spark-{session_id}.json"
    mark.write_text(json.dumps({"spark_session": session_id, "remote": remote,
                                "parent": os.getpid()}))  # fmt: skip
    return mark


def _stop_remote(splice_dir: Path, info: dict[str, Any]) -> bool:
    """Stop an orchestrator's run whose Splice run died (best effort: it may have ended)."""
    from splice.config.workspace import load_config
    from splice.errors import SpliceError
    from splice.orchestrators import for_job

    try:
        cfg = load_config(splice_dir.parent)
        job = next(j for j in cfg.ingestion if j.name == info.get("ingestion"))
        orch = for_job(job, splice_dir.parent)
        if orch is None:
            return False
        rid = str(info["run_id"])
        if orch.status(rid).finished:
            return False
        orch.terminate(rid)
        deadline = time.monotonic() + 60  # the restore must not race the run's last writes
        while time.monotonic() < deadline and not orch.status(rid).finished:
            time.sleep(0.5)
        return True
    except (SpliceError, StopIteration, KeyError):
        return False


def kill_orphans(splice_dir: Path) -> list[dict[str, Any]]:
    """Kill the process groups of children whose parent is gone; returns what was killed.

    Call it only while holding the run lock (no live run owns them then)."""
    registry = splice_dir / "locks" / "children"
    killed: list[dict[str, Any]] = []
    if not registry.is_dir():
        return killed
    for mark in registry.glob("*.json"):
        try:
            info = json.loads(mark.read_text())
        except (OSError, ValueError):
            mark.unlink(missing_ok=True)
            continue
        parent = int(info.get("parent") or 0)
        if parent and parent != os.getpid() and pid_alive(parent):
            continue  # its run is alive: not ours to kill
        if info.get("orchestrator"):
            if _stop_remote(splice_dir, info):
                killed.append(info)
            mark.unlink(missing_ok=True)
            continue
        if info.get("spark_session"):
            from splice.warehouse.spark.connect import interrupt_session

            ops = interrupt_session(str(info["remote"]), str(info["spark_session"]))
            if ops:
                killed.append({**info, "operations": ops})
            mark.unlink(missing_ok=True)
            continue
        if pid_alive(int(info.get("pid") or 0)):
            _kill_group(int(info.get("pgid") or info.get("pid") or 0))
            killed.append(info)
        mark.unlink(missing_ok=True)
    return killed
