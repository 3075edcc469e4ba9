"""Where things live in a demo workspace, the quarter it covers, and the demo's error type.

Every path is relative to the workspace directory, so a workspace can be moved or copied.

>>> Q3_START, Q3_END
(datetime.date(2026, 7, 1), datetime.date(2026, 9, 30))
>>> (Q3_END - Q3_START).days + 1
92
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

from splice.errors import SpliceError

#: The quarter the demo builds end to end.
Q3_START = date(2026, 7, 1)
Q3_END = date(2026, 9, 30)
#: The clock SQLMesh runs with (the data lives in the past): midnight after the last day,
#: so every daily interval of Q3 is complete and nothing later is due.
EXECUTION_TIME = datetime(2026, 10, 1)
#: The seed of the bookings generator (same seed, same bookings).
BOOKINGS_SEED = 20260701

WAREHOUSE_FILE = "warehouse.duckdb"
CATALOG = "warehouse"  # DuckDB names the catalog after the file stem
CONFIG_FILE = "splice.toml"
VENDOR_FILE = "vendor/vendor.json"
PIPELINES_DIR = ".splice/dlt"
LOG_FILE = ".splice/logs/demo.log"
RECORD_FILE = ".splice/demo.json"
PRICING_DIR = "pricing"
FINANCE_DIR = "finance"

#: The port ``python -m splice.demo.vendor`` listens on when run on its own.  Inside a build
#: (and when the ingest script is given no --vendor-url) the vendor runs embedded on an
#: ephemeral port instead.
DEFAULT_VENDOR_PORT = 8766  # not 8765: that is splice serve's default ([serve] port)
VENDOR_PATH = "/v1/rates"


class DemoError(SpliceError):
    """The demo workspace could not be written or built."""


def warehouse_path(workspace: Path) -> Path:
    """The DuckDB file of a demo workspace.

    >>> warehouse_path(Path("/tmp/travel")).as_posix()
    '/tmp/travel/warehouse.duckdb'
    """
    return Path(workspace) / WAREHOUSE_FILE


def parse_day(text: str) -> date:
    """A ``YYYY-MM-DD`` argument as a date, with an error that says what was expected.

    >>> parse_day("2026-09-28")
    datetime.date(2026, 9, 28)
    >>> parse_day("28/09/2026")
    Traceback (most recent call last):
    ...
    splice.demo.layout.DemoError: '28/09/2026' is not a date.
    """
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        raise DemoError(f"{text!r} is not a date.", fix="write dates as YYYY-MM-DD") from None


def days_between(start: date, end: date) -> list[date]:
    """Every calendar day from ``start`` to ``end``, both included.

    >>> [d.day for d in days_between(date(2026, 9, 28), date(2026, 9, 30))]
    [28, 29, 30]
    """
    if end < start:
        raise DemoError(
            f"the range {start} .. {end} ends before it starts.",
            fix="pass --start on or before --end",
        )
    return [date.fromordinal(o) for o in range(start.toordinal(), end.toordinal() + 1)]
