"""Splice and the BI tools that read its warehouse (a local Apache Superset for demos and tests)."""
