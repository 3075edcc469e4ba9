-- pricing:fx.daily_rates/rows
SELECT
  CAST("rate_date" AS DATE) AS "interval_start",
  COUNT(*) AS "m0",
  AVG(CASE WHEN "currency" IS NULL THEN 1.0 ELSE 0.0 END) AS "m1",
  AVG(CASE WHEN "rate_key" IS NULL THEN 1.0 ELSE 0.0 END) AS "m2",
  AVG(CASE WHEN "rate_to_usd" IS NULL THEN 1.0 ELSE 0.0 END) AS "m3",
  AVG(CASE WHEN "as_of" IS NULL THEN 1.0 ELSE 0.0 END) AS "m4",
  COUNT(DISTINCT "currency") AS "m5",
  COUNT(CASE WHEN NOT "rate_date" IS NULL AND NOT "currency" IS NULL THEN 1 END) - COUNT(
    DISTINCT CASE
      WHEN "rate_date" IS NULL
      THEN NULL
      WHEN "currency" IS NULL
      THEN NULL
      ELSE ("rate_date", "currency")
    END
  ) AS "m6",
  COUNT(CASE WHEN NOT "rate_key" IS NULL THEN 1 END) - COUNT(DISTINCT "rate_key") AS "m7"
FROM "warehouse"."fx"."daily_rates"
WHERE
  "rate_date" >= CAST('2026-09-21' AS DATE)
GROUP BY
  CAST("rate_date" AS DATE)

-- pricing:fx.daily_rates/by_currency
SELECT
  CAST("rate_date" AS DATE) AS "interval_start",
  "currency" AS "d0",
  AVG("rate_to_usd") AS "m0",
  AVG(DATE_DIFF('DAY', CAST("as_of" AS DATE), CAST("rate_date" AS DATE))) AS "m1"
FROM "warehouse"."fx"."daily_rates"
WHERE
  "rate_date" >= CAST('2026-09-21' AS DATE)
GROUP BY
  CAST("rate_date" AS DATE),
  "currency"

-- pricing:marts.agg_gmv_daily/rows
SELECT
  CAST("booking_date" AS DATE) AS "interval_start",
  COUNT(*) AS "m0",
  AVG(CASE WHEN "currency" IS NULL THEN 1.0 ELSE 0.0 END) AS "m1",
  AVG(CASE WHEN "bookings" IS NULL THEN 1.0 ELSE 0.0 END) AS "m2",
  AVG(CASE WHEN "gmv_usd" IS NULL THEN 1.0 ELSE 0.0 END) AS "m3",
  AVG(CASE WHEN "gmv_key" IS NULL THEN 1.0 ELSE 0.0 END) AS "m4"
FROM "warehouse"."marts"."agg_gmv_daily"
WHERE
  "booking_date" >= CAST('2026-09-21' AS DATE)
GROUP BY
  CAST("booking_date" AS DATE)
