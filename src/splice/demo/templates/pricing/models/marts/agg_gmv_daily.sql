MODEL (
  name marts.agg_gmv_daily,
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column booking_date
  ),
  grain (booking_date, currency),
  description 'Gross merchandise value per day and currency, in the local currency and in US dollars.',
  column_descriptions (
    booking_date = 'The day of the bookings',
    currency = 'ISO 4217 code of the currency the customers paid in',
    bookings = 'Number of bookings',
    gmv_local = 'GMV in the local currency',
    gmv_usd = 'GMV in US dollars',
    gmv_key = 'currency:booking_date, unique per row'
  ),
  audits (
    not_null(columns := (booking_date, currency, bookings, gmv_local, gmv_usd, gmv_key)),
    unique_values(columns := (gmv_key)),
    unique_combination_of_columns(columns := (booking_date, currency)),
    accepted_range(column := gmv_usd, min_v := 0, inclusive := false),
    accepted_range(column := bookings, min_v := 1)
  )
);

SELECT
  booking_date,
  currency,
  COUNT(*) AS bookings,
  SUM(CAST(amount AS DECIMAL(18, 2))) AS gmv_local,
  SUM(amount_usd) AS gmv_usd,
  currency || ':' || STRFTIME(booking_date, '%Y-%m-%d') AS gmv_key
FROM marts.fct_bookings_usd
WHERE
  booking_date BETWEEN @start_ds AND @end_ds
GROUP BY
  booking_date,
  currency
