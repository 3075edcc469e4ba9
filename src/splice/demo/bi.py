"""The demo's dashboards in a real BI tool: ``splice demo DIR --bi superset``.

A local Apache Superset (``make superset`` builds its environment; it is started on a free
127.0.0.1 port with its home in ``DIR/.splice/superset`` and left running), the "GMV" dashboard
seeded over the demo's warehouse (a chart on ``finance.fct_gmv_qtd`` and one on a virtual SQL
dataset joining two finance tables), and a ``[[bi]]`` entry in splice.toml that reads it and
annotates its charts while an incident is open (``annotate = true``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HOME = ".splice/superset"


def entry(url: str) -> str:
    """The ``[[bi]]`` entry of the demo's Superset."""
    return (
        "\n# The finance dashboards live in Superset (a local one, left running: `splice local\n"
        "# status` lists it, `splice local stop` stops it). Splice reads its dashboards and\n"
        "# charts into the graph and writes each open incident onto the charts it reaches.\n"
        f'[[bi]]\nname = "superset"\ntype = "superset"\nurl = "{url}"\nlocal = "{HOME}"\n'
        'annotate = true\nrefresh = "30s"\nowner = "finance"\n'
    )


def use_superset(workspace: Path, port: int | None = None) -> dict[str, Any]:
    """Start the demo's Superset, seed the GMV dashboard over the warehouse and declare it in
    splice.toml; what was seeded (ids, the dashboard's URL)."""
    from splice import api

    url = f"http://127.0.0.1:{port or api.free_port()}"
    toml = workspace / "splice.toml"
    if "[[bi]]" not in toml.read_text():
        toml.write_text(toml.read_text() + entry(url))
    else:
        url = next(line.split('"')[1] for line in toml.read_text().splitlines()
                   if line.startswith("url = ") and "127.0.0.1" in line)  # fmt: skip
    api.start_local_bi(workspace)
    admin = json.loads((workspace / HOME / "admin.json").read_text())
    return dict(api.seed_superset_demo(url, admin["username"], admin["password"],
                                       workspace / "warehouse.duckdb"))  # fmt: skip
