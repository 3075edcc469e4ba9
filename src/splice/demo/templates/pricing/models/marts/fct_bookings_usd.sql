MODEL (
  name marts.fct_bookings_usd,
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column booking_date
  ),
  grain booking_id,
  description 'Every booking with its amount in US dollars, converted at the latest business-day rate on or before the booking date.',
  column_descriptions (
    booking_id = 'Booking identifier',
    booked_at = 'When the booking was made',
    booking_date = 'The day of the booking',
    currency = 'ISO 4217 code of the currency the customer paid in',
    channel = 'web, app or partner',
    amount = 'Amount paid, in the local currency',
    rate_date = 'The business day whose rate converted the booking (Friday for a weekend)',
    rate_as_of = 'The day the vendor said that rate was published',
    rate_to_usd = 'US dollars per unit of the currency used',
    amount_usd = 'Amount paid, in US dollars (rounded to 1/100 of a cent)'
  ),
  audits (
    not_null(columns := (booking_id, booking_date, currency, amount, rate_date, rate_to_usd, amount_usd)),
    unique_values(columns := (booking_id)),
    accepted_range(column := amount_usd, min_v := 0, inclusive := false)
  )
);

WITH rates AS (
  /* rates from a week before the interval, so weekend bookings find Friday's rate; each rate
     holds until the next business day's (one SQL for DuckDB and PostgreSQL: no ASOF join) */
  SELECT
    rate_date,
    currency,
    rate_to_usd,
    as_of,
    LEAD(rate_date) OVER (PARTITION BY currency ORDER BY rate_date) AS next_rate_date
  FROM fx.daily_rates
  WHERE
    rate_date BETWEEN @start_date - INTERVAL 7 DAY AND @end_date
)
SELECT
  b.booking_id,
  b.booked_at,
  b.booking_date,
  b.currency,
  b.channel,
  b.amount,
  r.rate_date,
  r.as_of AS rate_as_of,
  r.rate_to_usd,
  /* money is DECIMAL so that sums are exact and the same on every build */
  CAST(b.amount * r.rate_to_usd AS DECIMAL(18, 4)) AS amount_usd
FROM raw.bookings AS b
LEFT JOIN rates AS r
  ON b.currency = r.currency
  AND b.booking_date >= r.rate_date
  AND (
    r.next_rate_date IS NULL OR b.booking_date < r.next_rate_date
  )
WHERE
  b.booking_date BETWEEN @start_ds AND @end_ds
