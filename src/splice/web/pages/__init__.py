"""The pages, one module per group; each has ``routes(web) -> list[Route]``."""

from __future__ import annotations

from typing import Any

#: The page modules, in the order their routes are matched.
MODULES = ("incidents", "proposals", "access", "receipts", "runs", "operator", "graph")


def routes(web: Any) -> list[Any]:
    import importlib

    out: list[Any] = []
    for name in MODULES:
        out += importlib.import_module(f"splice.web.pages.{name}").routes(web)
    return out
