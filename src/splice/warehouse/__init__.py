"""Splice's own queries on the warehouse, and one folder per engine.

Engine-neutral: one way to connect (:mod:`.connect`), rows and checksums as sqlglot expressions
(:mod:`.rows`), the saved rows of an undo (:mod:`.saved`), a run lock's hold in the warehouse
(:mod:`.locks`), capabilities as data (:mod:`.capabilities`). Each engine (``duckdb/``,
``postgres/``, ``spark/``) is a folder of the same modules (connect, columns, rows, undo,
locks, grants, capabilities; local_server where Splice starts one), listed in
:mod:`.engines`, which maps a ``[warehouse] type`` to its folder.
"""
