"""The executors, by the format of the segments they run: the one table the runner reads.

>>> list(EXECUTORS)
['dbt', 'sqlmesh', 'ingestion']
>>> EXECUTABLE["sqlmesh"]
('model', 'seed', 'audit')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from splice.run.executors.base import Executor, ExecutorCapabilities
from splice.run.executors.dbt import DbtExecutor
from splice.run.executors.ingestion import IngestionExecutor
from splice.run.executors.sqlmesh import SqlmeshExecutor

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Segment format -> the class that runs it (the tools are imported only when one runs).
EXECUTORS: dict[str, type[Executor]] = {
    "dbt": DbtExecutor,
    "sqlmesh": SqlmeshExecutor,
    "ingestion": IngestionExecutor,  # a repair's reload step (splice.repair.apply_plan)
}

#: Segment format -> what its executor can do.
CAPABILITIES: dict[str, ExecutorCapabilities] = {
    fmt: cls.capabilities for fmt, cls in EXECUTORS.items()
}

#: Node tool -> the node kinds its executor hands to it; the rest (sources, externals,
#: dashboards) are graph nodes with nothing to build.
EXECUTABLE: dict[str, tuple[str, ...]] = {
    fmt: caps.kinds for fmt, caps in CAPABILITIES.items() if caps.kinds
}


def executor_for(ws: Workspace, project: str, fmt: str) -> Executor:
    """The executor of ``project``'s segments of format ``fmt``.

    >>> executor_for(None, "shop", "spreadsheet")
    Traceback (most recent call last):
    ...
    ValueError: no executor for format 'spreadsheet'
    """
    cls = EXECUTORS.get(fmt)
    if cls is None:
        raise ValueError(f"no executor for format {fmt!r}")
    return cls(ws, project)
