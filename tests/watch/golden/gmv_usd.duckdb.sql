SELECT
  CAST("booking_date" AS DATE) AS "interval_start",
  "currency" AS "d0",
  SUM("gmv_usd") AS "m0"
FROM "warehouse"."marts"."agg_gmv_daily"
WHERE
  "booking_date" >= CAST('2026-09-21' AS DATE)
GROUP BY
  CAST("booking_date" AS DATE),
  "currency"
