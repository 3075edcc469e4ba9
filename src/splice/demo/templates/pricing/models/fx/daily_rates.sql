MODEL (
  name fx.daily_rates,
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column rate_date
  ),
  grain (rate_date, currency),
  description 'ECB reference rates in US dollars per unit, one row per business day and currency.',
  column_descriptions (
    rate_date = 'The business day the rate is for',
    currency = 'ISO 4217 currency code',
    rate_to_usd = 'US dollars per one unit of the currency',
    as_of = 'The day the vendor says the rate was published',
    rate_key = 'currency:rate_date, unique per row'
  ),
  audits (
    not_null(columns := (rate_date, currency, rate_to_usd, as_of, rate_key)),
    unique_values(columns := (rate_key)),
    unique_combination_of_columns(columns := (rate_date, currency)),
    accepted_range(column := rate_to_usd, min_v := 0, max_v := 10, inclusive := false)
  )
);

SELECT
  rate_date::DATE AS rate_date,
  currency::TEXT AS currency,
  rate_to_usd::DOUBLE AS rate_to_usd,
  as_of::DATE AS as_of,
  currency || ':' || STRFTIME(rate_date, '%Y-%m-%d') AS rate_key
FROM raw.fx_rates
WHERE
  rate_date BETWEEN @start_ds AND @end_ds
