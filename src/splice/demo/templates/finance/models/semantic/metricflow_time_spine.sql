-- The semantic layer's calendar: one row per day from 2025 through 2027, which MetricFlow
-- joins metrics to. dbt's own generate_series and dateadd macros, with a fixed length, so it
-- compiles without asking the warehouse and builds on every warehouse the demo runs on.
{{ config(materialized='table') }}
select cast({{ dbt.dateadd('day', 'generated_number - 1', "cast('2025-01-01' as date)") }} as date) as date_day
from ({{ dbt.generate_series(1095) }}) as days
