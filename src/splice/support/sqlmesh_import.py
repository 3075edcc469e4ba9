"""Import SQLMesh so that sqlglot generates its expressions whatever ran before.

sqlglot (30.x) builds each Generator class's dispatch table (expression class -> SQL function)
once, the first time that generator is instantiated, and caches it
(``sqlglot.generator._DISPATCH_CACHE``). SQLMesh, when it is imported, adds its own expressions
(``MODEL (...)``, macros, ``@DEF``) to every generator's ``TRANSFORMS`` and overrides some
``*_sql`` methods. A generator used before that import (Splice builds DuckDB SQL with sqlglot
for the plan memo, evidence and metrics) keeps a dispatch table without them, and SQLMesh then
fails with "Unsupported expression type Model" when it loads a model file or diffs a plan. The
same error reproduces without Splice: generate DuckDB SQL with sqlglot, then load a SQLMesh
project in the same process.

Every place that uses SQLMesh imports it through :func:`import_sqlmesh`, which clears the
dispatch cache once, after SQLMesh extended sqlglot: the tables are rebuilt, complete, on the
next use.
"""

from __future__ import annotations

from types import ModuleType

_cleared = False


def import_sqlmesh() -> ModuleType:
    """``import sqlmesh``, with sqlglot's generator dispatch tables rebuilt after it.

    >>> import_sqlmesh().__name__
    'sqlmesh'
    """
    global _cleared
    import sqlmesh  # extends sqlglot's tokenizers, parsers and generators on first import

    if not _cleared:
        from sqlglot import generator

        cache = getattr(generator, "_DISPATCH_CACHE", None)
        if isinstance(cache, dict):
            cache.clear()
        _cleared = True
    return sqlmesh
