"""PostgreSQL: a throwaway local server, started and stopped by Splice."""
