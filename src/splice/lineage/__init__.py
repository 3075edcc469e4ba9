"""Column lineage from rendered SQL, across dbt and SQLMesh.

- :func:`analyse_model`: one query -> :class:`ModelLineage` (every output column's upstream
  ``(relation, column, kind)`` refs), in one parse-and-qualify pass; never raises.
- :func:`analyse_many`: many queries, on a process pool when there are many.
- :func:`lineage_key`: the content hash to cache a result by (store ``to_dict()``).
- :class:`LineageIndex` (:mod:`splice.lineage.walk`): walk columns upstream / downstream across
  models and projects.
- :func:`to_openlineage_facet`: the OpenLineage ``columnLineage`` dataset facet.
"""

from splice.lineage.cache import lineage_key
from splice.lineage.engine import analyse_model
from splice.lineage.openlineage import to_openlineage_facet
from splice.lineage.parallel import LineageRequest, analyse_many
from splice.lineage.types import ColumnLineage, ColumnRef, JoinKey, ModelLineage, merge_refs
from splice.lineage.walk import Hop, LineageIndex, downstream, upstream

__all__ = [
    "ColumnLineage",
    "ColumnRef",
    "Hop",
    "JoinKey",
    "LineageIndex",
    "LineageRequest",
    "ModelLineage",
    "analyse_many",
    "analyse_model",
    "downstream",
    "lineage_key",
    "merge_refs",
    "to_openlineage_facet",
    "upstream",
]
