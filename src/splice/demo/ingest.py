"""The ``fx_rates_ingest`` dlt pipeline: the vendor's daily rates into ``raw.fx_rates``.

The workspace script ``ingest/fx_rates_ingest.py`` is a thin wrapper around :func:`main`, so
the same code runs from the command line (the command splice.toml declares, e.g. to reload
named days) and in process inside :func:`splice.demo.build_demo`.

It asks the vendor for each calendar day of ``--start .. --end`` (the vendor answers 404 on
days the ECB did not publish; those days are skipped) and loads one row per business day and
currency: ``rate_date DATE, currency TEXT, rate_to_usd DOUBLE, as_of DATE`` (plus dlt's
``_dlt_load_id`` and ``_dlt_id``).

The write disposition is ``merge`` on ``(rate_date, currency)`` with ``rate_date`` as the
merge key: reloading a day replaces all of that day's rows (also those under a key the vendor no
longer sends, a code it sent in lower case), so a repair ("reload 2026-09-28 .. 2026-09-29 once the vendor is fixed")
is just a rerun of the pipeline for those days, and ``raw.fx_rates`` never holds two rates
for one currency and day (nothing downstream has to de-duplicate).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from splice.demo.layout import PIPELINES_DIR, DemoError, days_between, parse_day, warehouse_path

PIPELINE_NAME = "fx_rates_ingest"
DATASET = "raw"
TABLE = "fx_rates"

COLUMNS: Any = {  # dlt column hints (TColumnSchema)
    "rate_date": {"data_type": "date", "nullable": False},
    "currency": {"data_type": "text", "nullable": False},
    "rate_to_usd": {"data_type": "double", "nullable": False},
    "as_of": {"data_type": "date", "nullable": False},
}


@dataclass
class IngestResult:
    """What one run of the pipeline loaded."""

    start: date
    end: date
    days_loaded: list[date] = field(default_factory=list)  # business days with rates
    days_skipped: list[date] = field(default_factory=list)  # vendor answered 404
    rows: int = 0
    load_id: str | None = None
    stale_days: dict[date, date] = field(
        default_factory=dict
    )  # rate_date -> as_of when they differ


def fetch_day(vendor_url: str, day: date, timeout: float = 10.0) -> dict[str, Any] | None:
    """The vendor's answer for ``day``, or None if it has no rates for that day (404)."""
    url = f"{vendor_url}?date={day.isoformat()}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise DemoError(
            f"the rates vendor answered {e.code} for {day}: {e.read().decode(errors='replace')}",
            fix="check vendor/vendor.json in the workspace",
            retry=e.code >= 500,
        ) from e
    except (urllib.error.URLError, OSError) as e:
        raise DemoError(
            f"the rates vendor at {vendor_url} could not be reached: {e}.",
            fix="start it (python -m splice.demo.vendor WORKSPACE) or omit --vendor-url "
            "to run it embedded",
            retry=True,
        ) from e


def _rows(vendor_url: str, days: list[date], result: IngestResult) -> Iterator[dict[str, Any]]:
    for day in days:
        body = fetch_day(vendor_url, day)
        if body is None:
            result.days_skipped.append(day)
            continue
        rate_date = date.fromisoformat(body["date"])
        as_of = date.fromisoformat(body["as_of"])
        if as_of != rate_date:
            result.stale_days[rate_date] = as_of
        result.days_loaded.append(rate_date)
        for currency, rate in sorted(body["rates"].items()):
            result.rows += 1
            yield {
                "rate_date": rate_date,
                "currency": currency,
                "rate_to_usd": float(rate),
                "as_of": as_of,
            }


def _explain(exc: BaseException) -> DemoError:
    """The SpliceError behind a dlt failure (the vendor's, say), or one naming dlt's step."""
    from splice.errors import SpliceError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, SpliceError):
            return DemoError(seen.message, fix=seen.fix, retry=seen.retry)
        seen = seen.__cause__ or seen.__context__
    step = getattr(exc, "step", None)
    where = f" at step {step}" if step else ""
    return DemoError(
        f"the dlt pipeline {PIPELINE_NAME} failed{where}: {type(exc).__name__}: {exc}",
        fix=f"see the pipeline's trace in {PIPELINES_DIR}/{PIPELINE_NAME}",
    )


def _destination(workspace: Path) -> Any:
    """dlt's destination for the workspace's warehouse: its DuckDB file, or its PostgreSQL."""
    import dlt

    from splice.demo.pg import dlt_credentials, ensure_local, target_of

    if target_of(workspace) is None:
        return dlt.destinations.duckdb(str(warehouse_path(workspace)))
    ensure_local(workspace)
    return dlt.destinations.postgres(credentials=dlt_credentials(workspace))


def ingest_fx_rates(
    workspace: Path,
    start: date,
    end: date,
    *,
    vendor_url: str | None = None,
) -> IngestResult:
    """Load the vendor's rates for ``start .. end`` into ``raw.fx_rates`` of ``workspace``.

    With no ``vendor_url`` the vendor runs embedded (on an ephemeral port) for the duration
    of the run, reading the workspace's vendor/vendor.json.
    """
    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    import dlt

    from splice.demo.vendor import Vendor

    workspace = Path(workspace).resolve()
    days = days_between(start, end)
    result = IngestResult(start=start, end=end)
    vendor = Vendor(workspace) if vendor_url is None else nullcontext()
    from splice.demo.spark import remote_of

    with vendor as running:
        url = running.url if isinstance(running, Vendor) else vendor_url
        assert url is not None
        if remote_of(workspace) is not None:  # dlt has no Spark destination: Spark writes
            return _ingest_spark(workspace, url, days, result)
        resource = dlt.resource(
            _rows(url, days, result),
            name=TABLE,
            write_disposition="merge",
            primary_key=("rate_date", "currency"),
            # a reloaded day replaces every row of that day, also rows whose currency no
            # longer comes (a code the vendor sent in lower case and then fixed)
            merge_key="rate_date",
            columns=COLUMNS,
        )
        pipeline = dlt.pipeline(
            pipeline_name=PIPELINE_NAME,
            destination=_destination(workspace),
            dataset_name=DATASET,
            pipelines_dir=str(workspace / PIPELINES_DIR),
        )
        try:
            info = pipeline.run(resource)
        except Exception as e:  # noqa: BLE001 - dlt wraps what went wrong; unwrap it
            raise _explain(e) from e
    result.load_id = info.loads_ids[0] if info.loads_ids else None
    return result


def _ingest_spark(workspace: Path, url: str, days: list[date], result: IngestResult
                  ) -> IngestResult:  # fmt: skip
    """The same rows written by Spark (:func:`splice.demo.spark.write_rates`)."""
    import uuid
    from datetime import UTC, datetime

    from splice.demo.spark import write_rates

    rows = list(_rows(url, days, result))
    loaded_at = datetime.now(UTC).replace(tzinfo=None)
    result.load_id = f"{loaded_at:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    write_rates(workspace, rows, result.load_id, loaded_at)
    return result


def main(argv: list[str] | None = None, *, workspace: Path | None = None) -> int:
    """Command line of ``ingest/fx_rates_ingest.py``."""
    parser = argparse.ArgumentParser(
        prog="fx_rates_ingest.py",
        description="Load the rates vendor's daily FX rates into raw.fx_rates (dlt, merge on "
        "rate_date + currency).",
    )
    parser.add_argument("--start", required=True, help="first day, YYYY-MM-DD")
    parser.add_argument("--end", required=True, help="last day, YYYY-MM-DD (included)")
    parser.add_argument(
        "--vendor-url",
        default=os.environ.get("SPLICE_DEMO_VENDOR_URL"),
        help="the vendor's rates endpoint (default: $SPLICE_DEMO_VENDOR_URL, or run the "
        "vendor embedded for this run)",
    )
    parser.add_argument("--workspace", type=Path, default=workspace or Path.cwd())
    args = parser.parse_args(argv)
    from splice.errors import SpliceError

    try:
        res = ingest_fx_rates(
            args.workspace, parse_day(args.start), parse_day(args.end), vendor_url=args.vendor_url
        )
    except SpliceError as e:
        print(f"fx_rates_ingest: {e.one_line()}", file=sys.stderr)
        return 2
    stale = ", ".join(f"{d} (as of {a})" for d, a in sorted(res.stale_days.items()))
    print(
        f"fx_rates_ingest: loaded {res.rows} rates for {len(res.days_loaded)} business days "
        f"{res.start} .. {res.end} (skipped {len(res.days_skipped)} days without rates)"
        + (f"; vendor served stale rates for {stale}" if stale else "")
    )
    return 0
