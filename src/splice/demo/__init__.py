"""The travel-marketplace demo workspace and its rates vendor.

The names below are imported lazily, so ``import splice.demo`` stays cheap and
``python -m splice.demo.vendor`` runs cleanly.

>>> from splice.demo import build_demo, set_incident, INCIDENTS
>>> sorted(INCIDENTS)[:4]
['codes-lowercase', 'friday-freeze', 'frozen-some', 'inverted-rate']
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.demo.bookings import load_bookings
    from splice.demo.build import DemoResult, build_demo, relocate, write_workspace
    from splice.demo.ingest import IngestResult, ingest_fx_rates
    from splice.demo.layout import DemoError
    from splice.demo.vendor import INCIDENTS, Vendor, read_settings, set_incident

_EXPORTS = {
    "INCIDENTS": "vendor",
    "DemoError": "layout",
    "DemoResult": "build",
    "IngestResult": "ingest",
    "Vendor": "vendor",
    "build_demo": "build",
    "ingest_fx_rates": "ingest",
    "load_bookings": "bookings",
    "read_settings": "vendor",
    "relocate": "build",
    "set_incident": "vendor",
    "write_workspace": "build",
}

__all__ = [
    "INCIDENTS",
    "DemoError",
    "DemoResult",
    "IngestResult",
    "Vendor",
    "build_demo",
    "ingest_fx_rates",
    "load_bookings",
    "read_settings",
    "relocate",
    "set_incident",
    "write_workspace",
]
assert sorted(__all__) == sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"splice.demo.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'splice.demo' has no attribute {name!r}")
