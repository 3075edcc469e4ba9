"""DuckDB: a file, one writer process at a time; the warehouse of the demo and of most tests."""
