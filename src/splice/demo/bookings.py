"""The marketplace's bookings: deterministic, seeded, loaded into ``raw.bookings``.

Every calendar day gets its own ``random.Random`` seeded from (seed, day), so regenerating a
single day gives exactly the rows a full build gave it.  Volume follows a weekly pattern
(Sundays and Mondays busy, Saturdays quiet) and a summer that fades into September; prices
are set in the local currency (a list price in USD converted once at the 2026-06-30 ECB
rate and rounded to the currency's minor unit), so GMV in USD moves with FX.

``raw.bookings``: ``booking_id TEXT, booked_at TIMESTAMP, booking_date DATE, currency TEXT,
amount DOUBLE`` (local currency) and ``channel TEXT`` (web, app, partner), plus the load that
wrote each row: ``_load_id TEXT`` and ``_loaded_at TIMESTAMP`` (UTC), as a loader stamps them.

:func:`load_bookings` replaces a date range (a reload repairs it); for the benchmark's faults it
can also append (the same rows loaded twice) and load only a share of each day (``part``: the
rest arrives in a later load, after the day was processed).

>>> rows = generate_bookings(date(2026, 9, 28), date(2026, 9, 28))
>>> rows == generate_bookings(date(2026, 9, 28), date(2026, 9, 28))
True
>>> rows[0].booking_id, rows[0].booking_date
('BK-20260928-00001', datetime.date(2026, 9, 28))
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from splice.demo.ecb import CURRENCIES, rates_to_usd
from splice.demo.layout import BOOKINGS_SEED, Q3_END, Q3_START, days_between, warehouse_path

#: Share of bookings per currency (a travel marketplace: dollars, euros and pounds dominate).
CURRENCY_WEIGHTS: dict[str, float] = {
    "USD": 24.0,
    "EUR": 20.0,
    "GBP": 10.0,
    "JPY": 4.5,
    "AUD": 4.0,
    "CAD": 4.0,
    "CHF": 2.5,
    "CNY": 3.0,
    "HKD": 1.5,
    "SGD": 1.8,
    "INR": 3.0,
    "KRW": 2.0,
    "MXN": 2.0,
    "BRL": 2.0,
    "SEK": 1.5,
    "NOK": 1.2,
    "DKK": 1.2,
    "PLN": 1.5,
    "CZK": 0.9,
    "HUF": 0.7,
    "RON": 0.6,
    "TRY": 1.0,
    "ILS": 0.8,
    "ZAR": 0.9,
    "NZD": 1.0,
    "THB": 1.3,
    "MYR": 0.8,
    "IDR": 0.9,
    "PHP": 0.7,
    "ISK": 0.3,
}
#: Currencies priced in whole units.
ZERO_DECIMALS = frozenset({"JPY", "KRW", "IDR", "HUF", "ISK"})
#: Bookings per weekday relative to an average day (Monday first).
WEEKLY = (1.12, 0.97, 0.94, 0.96, 1.0, 0.82, 1.19)
CHANNELS = (("web", 0.52), ("app", 0.38), ("partner", 0.10))
PRICE_LIST_DAY = date(2026, 6, 30)
BASE_PER_DAY = 1000

assert set(CURRENCY_WEIGHTS) == set(CURRENCIES)


class Booking(NamedTuple):
    booking_id: str
    booked_at: datetime
    booking_date: date
    currency: str
    amount: float
    channel: str


def bookings_per_day(day: date, rng: random.Random) -> int:
    """How many bookings ``day`` gets: weekly pattern x summer trend x a little noise."""
    into = min(max((day - Q3_START).days / ((Q3_END - Q3_START).days or 1), 0.0), 1.0)
    summer = 1.15 - 0.3 * into  # the summer trend of Q3; flat before and after it
    return max(1, round(BASE_PER_DAY * WEEKLY[day.weekday()] * summer * rng.gauss(1.0, 0.04)))


def _day_bookings(day: date, seed: int, price_list: dict[str, float]) -> list[Booking]:
    rng = random.Random(f"splice-demo-bookings:{seed}:{day.isoformat()}")
    n = bookings_per_day(day, rng)
    currencies = rng.choices(list(CURRENCY_WEIGHTS), weights=list(CURRENCY_WEIGHTS.values()), k=n)
    channels = rng.choices([c for c, _ in CHANNELS], weights=[w for _, w in CHANNELS], k=n)
    seconds = sorted(rng.randrange(86_400) for _ in range(n))
    midnight = datetime(day.year, day.month, day.day)
    out: list[Booking] = []
    for i in range(n):
        cur = currencies[i]
        usd = min(max(rng.lognormvariate(math.log(260.0), 0.65), 25.0), 9_000.0)
        local = usd / price_list[cur]
        amount = float(round(local)) if cur in ZERO_DECIMALS else round(local, 2)
        out.append(
            Booking(
                booking_id=f"BK-{day:%Y%m%d}-{i + 1:05d}",
                booked_at=midnight + timedelta(seconds=seconds[i]),
                booking_date=day,
                currency=cur,
                amount=amount,
                channel=channels[i],
            )
        )
    return out


def generate_bookings(start: date, end: date, seed: int = BOOKINGS_SEED) -> list[Booking]:
    """Every booking made from ``start`` to ``end`` (both included), in booking order."""
    price_list = rates_to_usd(PRICE_LIST_DAY)
    assert price_list is not None
    rows: list[Booking] = []
    for day in days_between(start, end):
        rows.extend(_day_bookings(day, seed, price_list))
    return rows


DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.bookings (
    booking_id   TEXT NOT NULL,
    booked_at    TIMESTAMP NOT NULL,
    booking_date DATE NOT NULL,
    currency     TEXT NOT NULL,
    amount       DOUBLE PRECISION NOT NULL,
    channel      TEXT NOT NULL
);
ALTER TABLE raw.bookings ADD COLUMN IF NOT EXISTS _load_id TEXT;
ALTER TABLE raw.bookings ADD COLUMN IF NOT EXISTS _loaded_at TIMESTAMP;
"""


@dataclass
class BookingsResult:
    start: date
    end: date
    rows: int
    load_id: str | None = None


def day_share(rows: list[Booking], part: tuple[float, float]) -> list[Booking]:
    """The bookings of each day whose place in the day (by time) falls in ``part``.

    >>> rows = generate_bookings(date(2026, 9, 28), date(2026, 9, 28))
    >>> a, b = day_share(rows, (0.0, 0.6)), day_share(rows, (0.6, 1.0))
    >>> len(a) + len(b) == len(rows), a[-1].booked_at <= b[0].booked_at
    (True, True)
    """
    lo, hi = part
    by_day: dict[date, list[Booking]] = {}
    for r in rows:
        by_day.setdefault(r.booking_date, []).append(r)
    out: list[Booking] = []
    for day_rows in by_day.values():
        n = len(day_rows)
        out += [r for i, r in enumerate(day_rows) if lo * n <= i < hi * n]
    return out


def load_bookings(
    workspace: Path,
    start: date,
    end: date,
    seed: int = BOOKINGS_SEED,
    *,
    append: bool = False,
    part: tuple[float, float] = (0.0, 1.0),
    scale: int | None = None,
    drop_channel: str | None = None,
) -> BookingsResult:
    """Replace the bookings of ``start .. end`` in ``raw.bookings`` with freshly generated ones.

    ``append`` adds them to what is there (loaded twice, they are duplicates); ``part`` loads
    only that share of each day's bookings (by time of day).  ``scale`` (by default the
    workspace's own, :func:`bookings_scale`) loads every generated booking that many times,
    each copy with its own id (``BK-...-00001.2``): a production-sized history for benchmarks
    with the same daily shape (every day's GMV times ``scale``).  ``drop_channel`` leaves out
    the bookings of that channel (a feed that lost one slice).
    """
    import uuid
    from datetime import UTC

    import duckdb
    import pandas as pd

    rows = generate_bookings(start, end, seed)
    if part != (0.0, 1.0):
        rows = day_share(rows, part)
    if drop_channel is not None:
        rows = [r for r in rows if r.channel != drop_channel]
    copies = bookings_scale(workspace) if scale is None else scale
    if copies < 1:
        from splice.demo.layout import DemoError

        raise DemoError(f"bookings scale {copies} is not a positive number.", fix="pass 1 or more")
    frame = pd.DataFrame(rows, columns=list(Booking._fields))
    frame["booking_date"] = pd.to_datetime(frame["booking_date"])
    loaded_at = datetime.now(UTC).replace(tzinfo=None)
    load_id = f"{loaded_at:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    from splice.demo.pg import target_of

    loaded = len(rows) * copies
    from splice.demo.spark import remote_of, write_bookings

    if remote_of(workspace) is not None:
        write_bookings(workspace, frame, load_id, loaded_at, start=start, end=end, append=append,
                       copies=copies)  # fmt: skip
        return BookingsResult(start=start, end=end, rows=loaded, load_id=load_id)
    if target_of(workspace) is not None:
        if copies > 1:
            frame = pd.concat(
                [frame]
                + [
                    frame.assign(booking_id=frame["booking_id"] + f".{k}")
                    for k in range(2, copies + 1)
                ],
                ignore_index=True,
            )
        _load_postgres(workspace, frame, start, end, append, load_id, loaded_at)
        return BookingsResult(start=start, end=end, rows=loaded, load_id=load_id)
    con = duckdb.connect(str(warehouse_path(workspace)))
    try:
        con.execute(DDL)
        con.execute("BEGIN TRANSACTION")
        if not append:
            con.execute("DELETE FROM raw.bookings WHERE booking_date BETWEEN ? AND ?", [start, end])
        con.register("new_bookings", frame)
        # copy k > 1 of a booking gets the id suffix ".k" (scale 1: one copy, ids unchanged)
        con.execute(
            "INSERT INTO raw.bookings SELECT CASE WHEN k = 1 THEN booking_id "
            "ELSE booking_id || '.' || k END, booked_at::TIMESTAMP, "
            "booking_date::DATE, currency, amount::DOUBLE, channel, ? AS _load_id, "
            "?::TIMESTAMP AS _loaded_at FROM new_bookings, range(1, ? + 1) AS copies(k) "
            "ORDER BY booked_at, booking_id, k",
            [load_id, loaded_at, copies],
        )
        con.execute("COMMIT")
    finally:
        con.close()
    return BookingsResult(start=start, end=end, rows=loaded, load_id=load_id)


def bookings_scale(workspace: Path) -> int:
    """How many times each generated booking is loaded in ``workspace`` (its demo record's
    ``bookings_scale``; 1 for a workspace built without one)."""
    import json

    from splice.demo.layout import RECORD_FILE

    path = Path(workspace) / RECORD_FILE
    if not path.exists():
        return 1
    return int(json.loads(path.read_text()).get("bookings_scale") or 1)


def _load_postgres(workspace: Path, frame: Any, start: date, end: date, append: bool,
                   load_id: str, loaded_at: datetime) -> None:  # fmt: skip
    """The same load into a PostgreSQL warehouse, in one transaction (COPY of the rows)."""
    from splice.demo.pg import connect

    frame = frame.sort_values(["booked_at", "booking_id"])
    with connect(workspace) as con:
        for stmt in [s for s in DDL.split(";") if s.strip()]:
            con.execute(stmt)
        with con.transaction():
            if not append:
                con.execute(
                    "DELETE FROM raw.bookings WHERE booking_date BETWEEN %s AND %s", (start, end)
                )
            with con.cursor().copy(
                "COPY raw.bookings (booking_id, booked_at, booking_date, currency, amount, "
                "channel, _load_id, _loaded_at) FROM STDIN"
            ) as cp:
                for r in frame.itertuples(index=False):
                    cp.write_row((r.booking_id, r.booked_at, r.booking_date.date(), r.currency,
                                  float(r.amount), r.channel, load_id, loaded_at))  # fmt: skip


def main(argv: list[str] | None = None, *, workspace: Path | None = None) -> int:
    """Command line of ``ingest/load_bookings.py``."""
    from splice.demo.layout import parse_day
    from splice.errors import SpliceError

    parser = argparse.ArgumentParser(
        prog="load_bookings.py",
        description="Regenerate the (deterministic) bookings of a date range into raw.bookings.",
    )
    parser.add_argument("--start", required=True, help="first day, YYYY-MM-DD")
    parser.add_argument("--end", required=True, help="last day, YYYY-MM-DD (included)")
    parser.add_argument("--seed", type=int, default=BOOKINGS_SEED)
    parser.add_argument("--workspace", type=Path, default=workspace or Path.cwd())
    args = parser.parse_args(argv)
    try:
        res = load_bookings(args.workspace, parse_day(args.start), parse_day(args.end), args.seed)
    except SpliceError as e:
        print(f"load_bookings: {e.one_line()}", file=sys.stderr)
        return 2
    print(f"load_bookings: loaded {res.rows} bookings for {res.start} .. {res.end}")
    return 0
