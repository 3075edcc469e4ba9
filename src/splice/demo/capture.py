"""Send the tools' own output (dbt, SQLMesh, dlt, DuckDB) to a log file instead of the terminal.

Both levels are redirected while a build runs: Python's ``sys.stdout``/``sys.stderr`` (what
``print``, ``logging`` and rich write to) and file descriptors 1 and 2 (what C extensions and
handlers holding the original streams write to).  :meth:`ToolOutput.released` gives the
terminal back for a moment, for progress messages.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     with ToolOutput(Path(d) / "tools.log") as out:
...         print("chatter")
...         with out.released():
...             print("progress")
...     print(open(Path(d) / "tools.log").read().strip())
progress
chatter
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any


class _Forward(io.TextIOBase):
    """A text stream writing to the log while a capture is active, and afterwards to whatever
    ``sys.<name>`` is then (a logging handler created during the capture keeps working)."""

    def __init__(self, name: str, target: IO[str]) -> None:
        self._name = name
        self._target: IO[str] | None = target

    def _stream(self) -> Any:
        if self._target is not None:
            return self._target
        stream = getattr(sys, self._name)
        if stream is self:
            stream = getattr(sys, f"__{self._name}__")
        return stream

    def write(self, s: str) -> int:
        stream = self._stream()
        if stream is None:
            return len(s)
        stream.write(s)
        return len(s)

    def flush(self) -> None:
        stream = self._stream()
        if stream is not None:
            with suppress(Exception):
                stream.flush()

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        stream = self._stream()
        if stream is None:
            raise io.UnsupportedOperation("fileno")
        return stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def detach_target(self) -> None:
        self._target = None


class ToolOutput:
    """Context manager: everything written to stdout/stderr goes to ``path`` (appended)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.stream: IO[str] | None = None
        self._saved_fds: dict[int, int] = {}
        self._saved_sys: tuple[Any, Any] | None = None
        self._forwards: list[_Forward] = []
        self._depth = 0

    # -- the redirection itself -------------------------------------------------------
    def _flush_all(self) -> None:
        for s in (sys.stdout, sys.stderr):
            with suppress(Exception):
                s.flush()

    def _redirect(self) -> None:
        assert self.stream is not None
        self._flush_all()
        self._saved_sys = (sys.stdout, sys.stderr)
        out, err = _Forward("stdout", self.stream), _Forward("stderr", self.stream)
        self._forwards += [out, err]
        sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
        self._saved_fds = {}
        for fd in (1, 2):
            try:
                self._saved_fds[fd] = os.dup(fd)
                os.dup2(self.stream.fileno(), fd)
            except OSError:  # no such descriptor (e.g. a windowless process): nothing to do
                pass

    def _restore(self) -> None:
        self._flush_all()
        if self.stream is not None:
            self.stream.flush()
        for fd, saved in self._saved_fds.items():
            os.dup2(saved, fd)
            os.close(saved)
        self._saved_fds = {}
        if self._saved_sys is not None:
            sys.stdout, sys.stderr = self._saved_sys
            self._saved_sys = None
        for f in self._forwards:
            f.detach_target()
        self._forwards = []

    def __enter__(self) -> ToolOutput:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.stream = open(self.path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._redirect()
        return self

    def __exit__(self, *exc: object) -> None:
        self._restore()
        if self.stream is not None:
            self.stream.close()
            self.stream = None

    @contextmanager
    def released(self) -> Iterator[None]:
        """Give stdout/stderr back to the caller for the duration of the block."""
        if self.stream is None:
            yield
            return
        self._restore()
        try:
            yield
        finally:
            self._redirect()

    def write(self, text: str) -> None:
        """Write a line of Splice's own to the log (step headers and the like)."""
        if self.stream is not None:
            self.stream.write(text if text.endswith("\n") else text + "\n")
