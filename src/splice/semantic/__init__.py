"""The semantic layers a team already declares its metrics in (dbt MetricFlow)."""
