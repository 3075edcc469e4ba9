"""Splice's own queries on the warehouse: one way to connect (:mod:`.connect`), rows and checksums
as sqlglot expressions (:mod:`.rows`), and one folder per engine (``postgres/``, ``spark/``)."""
