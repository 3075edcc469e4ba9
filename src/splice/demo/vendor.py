"""The demo's FX rates vendor: a small HTTP API on 127.0.0.1 serving real ECB rates.

``GET /v1/rates?date=YYYY-MM-DD`` answers, for a day the ECB published::

    {"date": "2026-09-25", "as_of": "2026-09-25", "base": "USD",
     "rates": {"EUR": 1.1403, "GBP": 1.3252..., "USD": 1.0, ...}}

where each rate is how many US dollars one unit of the currency is worth.  On a day the
ECB did not publish (weekends, TARGET holidays, dates outside the data) it answers 404 with
a JSON error, as the real feed has nothing for that day.

What the vendor does is read from ``vendor/vendor.json`` in the workspace at every request,
so an incident can be switched on or off while it runs::

    {"incident": "stale-rates",
     "freeze": {"from": "2026-09-28", "to": "2026-09-29", "serve_as_of": "2026-09-25"}}

makes it answer the 28th and the 29th with Friday 2026-09-25's rates (and ``as_of``
2026-09-25); ``{"incident": null, "freeze": null}`` (or no file) is the honest vendor.

Other faults (the benchmark's scenarios) are listed under ``"faults"``, each
``{"kind", "from", "to" (optional: open-ended), "currencies" (optional: all)}`` plus its own
settings, applied in order to the days from ``from`` to ``to``:

- ``freeze``: the rates of ``serve_as_of`` (the as-of says so only when every currency is
  frozen);
- ``late``: the rates of ``intervals`` business days earlier, with an honest as-of
  (``honest_as_of``: true) or one that claims the day itself;
- ``invert``: 1 / rate (units of the currency per dollar instead of dollars per unit);
- ``scale``: rate x ``factor`` (a unit change);
- ``negate``: -rate (a sign error: the range audit fails);
- ``outage``: no rates at all: the vendor answers ``status`` (503 unless said) with a JSON
  error, or with ``"empty": true`` a 200 whose ``rates`` is empty;
- ``lowercase``: the currency codes in lower case (``eur``): rows load, the counts look normal,
  and nothing downstream that joins on the code matches them.

>>> status, body = respond("/v1/rates?date=2026-09-26", {})
>>> status, body["error"]
(404, 'no rates published for 2026-09-26 (not an ECB business day)')
>>> status, body = respond("/v1/rates?date=2026-09-28", INCIDENTS["stale-rates"])
>>> status, body["date"], body["as_of"], len(body["rates"])
(200, '2026-09-28', '2026-09-25', 30)
>>> _, late = respond("/v1/rates?date=2026-09-28", INCIDENTS["late-lying"])
>>> late["as_of"], late["rates"]["EUR"] == rates_to_usd(date(2026, 9, 25))["EUR"]
('2026-09-28', True)
>>> _, inv = respond("/v1/rates?date=2026-09-28", INCIDENTS["inverted-rate"])
>>> round(inv["rates"]["EUR"] * rates_to_usd(date(2026, 9, 28))["EUR"], 9)
1.0
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from splice.demo.ecb import CURRENCIES, rates_to_usd
from splice.demo.layout import DEFAULT_VENDOR_PORT, VENDOR_FILE, VENDOR_PATH, DemoError
from splice.errors import ConfigError

log = logging.getLogger(__name__)

CLEAN: dict[str, Any] = {"incident": None, "freeze": None}


def _faults(name: str, *faults: dict[str, Any]) -> dict[str, Any]:
    return {"incident": name, "freeze": None, "faults": list(faults)}


#: The incidents the demo knows, as the vendor.json that switches each on.
INCIDENTS: dict[str, dict[str, Any]] = {
    # Monday 2026-09-28 and Tuesday the 29th: the vendor re-serves Friday's rates.
    "stale-rates": {
        "incident": "stale-rates",
        "freeze": {"from": "2026-09-28", "to": "2026-09-29", "serve_as_of": "2026-09-25"},
    },
    # Friday 2026-09-25: the vendor re-serves Thursday's rates; the weekend's bookings are
    # converted at Friday's rate, so the damage downstream runs through Sunday
    "friday-freeze": {
        "incident": "friday-freeze",
        "freeze": {"from": "2026-09-25", "to": "2026-09-25", "serve_as_of": "2026-09-24"},
    },
    # three currencies stop moving from Monday on (the as-of still says the day)
    "frozen-some": _faults(
        "frozen-some",
        {
            "kind": "freeze",
            "from": "2026-09-28",
            "to": "2026-09-30",
            "currencies": ["JPY", "CHF", "SEK"],
            "serve_as_of": "2026-09-25",
        },
    ),  # fmt: skip
    # from Monday on the vendor is a business day behind, and its as-of says so
    "late-honest": _faults(
        "late-honest",
        {"kind": "late", "from": "2026-09-28", "intervals": 1, "honest_as_of": True},
    ),
    # the same, but the as-of claims the day itself
    "late-lying": _faults(
        "late-lying",
        {"kind": "late", "from": "2026-09-28", "intervals": 1, "honest_as_of": False},
    ),
    # a business day behind on Monday and Tuesday only (the as-of claims the day), then caught
    # up: Wednesday's rates are Wednesday's again
    "late-caught-up": _faults(
        "late-caught-up",
        {
            "kind": "late",
            "from": "2026-09-28",
            "to": "2026-09-29",
            "intervals": 1,
            "honest_as_of": False,
        },
    ),  # fmt: skip
    # EUR per USD instead of USD per EUR, Monday to Wednesday
    "inverted-rate": _faults(
        "inverted-rate",
        {"kind": "invert", "from": "2026-09-28", "to": "2026-09-30", "currencies": ["EUR"]},
    ),
    # the same on Monday and Tuesday only
    "inverted-two-days": _faults(
        "inverted-two-days",
        {"kind": "invert", "from": "2026-09-28", "to": "2026-09-29", "currencies": ["EUR"]},
    ),
    # JPY quoted per 100 yen from Monday on (x100; still inside the range audit)
    "unit-change": _faults(
        "unit-change",
        {"kind": "scale", "from": "2026-09-28", "currencies": ["JPY"], "factor": 100},
    ),
    # the same from Monday 2026-07-27 on: it lasts past the 8-week training window
    "unit-change-lasting": _faults(
        "unit-change-lasting",
        {"kind": "scale", "from": "2026-07-27", "currencies": ["JPY"], "factor": 100},
    ),
    # a sign error on Monday's GBP: the range audit of fx.daily_rates fails
    "negative-rate": _faults(
        "negative-rate",
        {"kind": "negate", "from": "2026-09-28", "to": "2026-09-28", "currencies": ["GBP"]},
    ),
    # the vendor is down Monday and Tuesday (HTTP 503), then recovers: the loads fail
    "vendor-outage": _faults(
        "vendor-outage", {"kind": "outage", "from": "2026-09-28", "to": "2026-09-29"}
    ),
    # from Monday on every currency code arrives in lower case ("eur"): a change of domain
    "codes-lowercase": _faults("codes-lowercase", {"kind": "lowercase", "from": "2026-09-28"}),
}
FAULT_KINDS = ("freeze", "late", "invert", "scale", "negate", "outage", "lowercase")


def check_incident(name: str | None) -> None:
    """Raise a ConfigError naming the known incidents if ``name`` is not one of them.

    >>> check_incident("stale-rates")
    >>> check_incident("stale-rate")
    Traceback (most recent call last):
    ...
    splice.errors.ConfigError: unknown incident 'stale-rate'.
    """
    if name is not None and name not in INCIDENTS:
        known = ", ".join(sorted(INCIDENTS))
        raise ConfigError(f"unknown incident {name!r}.", fix=f"use one of: {known}")


def settings_path(workspace: Path) -> Path:
    return Path(workspace) / VENDOR_FILE


def read_settings(workspace: Path) -> dict[str, Any]:
    """The vendor's current behaviour (the honest vendor if there is no vendor.json)."""
    path = settings_path(workspace)
    if not path.exists():
        return dict(CLEAN)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise DemoError(
            f"{path}: not valid JSON: {e}.",
            fix="correct it, or reset it with splice.demo.set_incident(workspace, None)",
        ) from e
    if not isinstance(data, dict):
        raise DemoError(f"{path}: expected a JSON object.", fix="reset it with set_incident")
    return data


def set_incident(workspace: Path, name: str | None) -> Path:
    """Switch the vendor of ``workspace`` to incident ``name`` (None: the honest vendor).

    Takes effect at the vendor's next request; returns the path of vendor.json.
    """
    check_incident(name)
    path = settings_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = INCIDENTS[name] if name else CLEAN
    path.write_text(json.dumps(settings, indent=2) + "\n")
    return path


def frozen_as_of(day: date, settings: dict[str, Any]) -> date | None:
    freeze = settings.get("freeze")
    if not freeze:
        return None
    try:
        lo = date.fromisoformat(freeze["from"])
        hi = date.fromisoformat(freeze["to"])
        as_of = date.fromisoformat(freeze["serve_as_of"])
    except (KeyError, TypeError, ValueError) as e:
        raise DemoError(
            f"vendor.json: 'freeze' needs dates 'from', 'to' and 'serve_as_of' ({e}).",
            fix="reset it with set_incident",
        ) from e
    return as_of if lo <= day <= hi else None


def respond(target: str, settings: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The status and JSON body the vendor answers for request target ``target``."""
    url = urlsplit(target)
    if url.path.rstrip("/") != VENDOR_PATH:
        return 404, {"error": f"no such endpoint {url.path!r}; try {VENDOR_PATH}?date=YYYY-MM-DD"}
    values = parse_qs(url.query).get("date", [])
    if len(values) != 1:
        return 400, {"error": "pass exactly one date=YYYY-MM-DD"}
    try:
        day = date.fromisoformat(values[0])
    except ValueError:
        return 400, {"error": f"{values[0]!r} is not a date (YYYY-MM-DD)"}
    if rates_to_usd(day) is None:
        return 404, {"error": f"no rates published for {day} (not an ECB business day)"}
    as_of = frozen_as_of(day, settings) or day
    rates = rates_to_usd(as_of)
    if rates is None:  # a freeze pointing at a day without rates
        return 500, {"error": f"vendor misconfigured: no rates for as_of {as_of}"}
    rates = dict(rates)
    down = _outage(day, settings)
    if down is not None:
        return down
    for fault in settings.get("faults") or []:
        as_of = _apply(fault, day, as_of, rates)
    return 200, {
        "date": day.isoformat(),
        "as_of": as_of.isoformat(),
        "base": "USD",
        "rates": {cur: rates[cur] for cur in sorted(rates)},
    }


def _outage(day: date, settings: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The answer of a vendor that is down on ``day`` (an ``outage`` fault), else None.

    >>> _outage(date(2026, 9, 28), INCIDENTS["vendor-outage"])[0]
    503
    >>> _outage(date(2026, 9, 30), INCIDENTS["vendor-outage"]) is None
    True
    """
    for fault in settings.get("faults") or []:
        if fault.get("kind") != "outage" or not _in_range(fault, day):
            continue
        if fault.get("empty"):
            return 200, {"date": day.isoformat(), "as_of": day.isoformat(), "base": "USD",
                         "rates": {}}  # fmt: skip
        return int(fault.get("status", 503)), {
            "error": f"rates service unavailable for {day} (upstream maintenance); retry later"
        }
    return None


def _in_range(fault: dict[str, Any], day: date) -> bool:
    try:
        lo = date.fromisoformat(fault["from"])
        hi = date.fromisoformat(fault["to"]) if fault.get("to") else date.max
    except (KeyError, TypeError, ValueError) as e:
        raise DemoError(
            f"vendor.json: a fault needs 'kind' and a 'from' date, and 'to' is a date ({e}).",
            fix="reset it with set_incident",
        ) from e
    return lo <= day <= hi


def _business_day_before(day: date, n: int) -> date:
    """The ``n``-th ECB business day before ``day``.

    >>> _business_day_before(date(2026, 9, 28), 1)
    datetime.date(2026, 9, 25)
    """
    d = day
    for _ in range(n):
        d = date.fromordinal(d.toordinal() - 1)
        while rates_to_usd(d) is None:
            d = date.fromordinal(d.toordinal() - 1)
    return d


def _apply(fault: dict[str, Any], day: date, as_of: date, rates: dict[str, float]) -> date:
    """Apply one fault of vendor.json to ``rates`` (in place); returns the as-of to report."""
    kind = fault.get("kind")
    within = _in_range(fault, day)  # checks 'from' and 'to' as well
    if kind not in FAULT_KINDS:
        raise DemoError(
            f"vendor.json: unknown fault kind {kind!r}.", fix=f"use one of {', '.join(FAULT_KINDS)}"
        )
    if kind == "outage" or not within:
        return as_of  # an outage is answered before any rate is served (_outage)
    chosen = fault.get("currencies") or sorted(rates)
    every = set(chosen) >= set(rates)
    if kind in ("freeze", "late"):
        src = (
            date.fromisoformat(fault["serve_as_of"])
            if kind == "freeze"
            else _business_day_before(day, int(fault.get("intervals", 1)))
        )
        old = rates_to_usd(src)
        if old is None:
            raise DemoError(f"vendor.json: no rates for {src} to serve on {day}.")
        for cur in chosen:
            rates[cur] = old[cur]
        if every and fault.get("honest_as_of", kind == "freeze"):
            return src
        return as_of
    if kind == "lowercase":
        for cur in chosen:
            rates[cur.lower()] = rates.pop(cur)
        return as_of
    for cur in chosen:
        if kind == "invert":
            rates[cur] = 1.0 / rates[cur]
        elif kind == "scale":
            rates[cur] = rates[cur] * float(fault.get("factor", 100))
        else:
            rates[cur] = -rates[cur]
    return as_of


class _Handler(BaseHTTPRequestHandler):
    server: VendorHTTPServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        try:
            status, body = respond(self.path, read_settings(self.server.workspace))
        except DemoError as e:
            status, body = 500, {"error": e.message}
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the http.server API
        log.debug("vendor: " + format, *args)


class VendorHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, workspace: Path, host: str, port: int) -> None:
        self.workspace = Path(workspace)
        super().__init__((host, port), _Handler)


class Vendor:
    """The vendor running in a background thread; use as a context manager.

    >>> import tempfile, urllib.request
    >>> with tempfile.TemporaryDirectory() as ws, Vendor(Path(ws)) as v:
    ...     body = json.load(urllib.request.urlopen(v.url + "?date=2026-09-25"))
    >>> body["as_of"], body["rates"]["USD"]
    ('2026-09-25', 1.0)
    """

    def __init__(self, workspace: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.workspace = Path(workspace)
        self.host = host
        self.port = port
        self._server: VendorHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The rates endpoint, e.g. ``http://127.0.0.1:54321/v1/rates``."""
        if self._server is None:
            raise DemoError("the vendor is not running.", fix="start it first")
        return f"http://{self.host}:{self._server.server_address[1]}{VENDOR_PATH}"

    def start(self) -> Vendor:
        try:
            self._server = VendorHTTPServer(self.workspace, self.host, self.port)
        except OSError as e:
            raise DemoError(
                f"the rates vendor could not listen on {self.host}:{self.port}: {e}.",
                fix="pick another port (0 picks a free one)",
                retry=True,
            ) from e
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="splice-demo-vendor",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Vendor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m splice.demo.vendor WORKSPACE [--port N]``: serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m splice.demo.vendor", description=__doc__)
    parser.add_argument(
        "workspace", type=Path, help="the demo workspace (reads vendor/vendor.json)"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_VENDOR_PORT)
    args = parser.parse_args(argv)
    server = VendorHTTPServer(args.workspace, args.host, args.port)
    port = server.server_address[1]
    print(
        f"serving ECB rates for {len(CURRENCIES)} currencies on "
        f"http://{args.host}:{port}{VENDOR_PATH} (vendor.json: {settings_path(args.workspace)})"
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
