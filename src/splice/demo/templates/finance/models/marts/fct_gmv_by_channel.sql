select
    cast(date_trunc('month', booking_date) as date) as month,
    channel,
    cast(count(*) as bigint) as bookings,
    sum(amount_usd) as gmv_usd
from {{ source('pricing', 'fct_bookings_usd') }}
group by 1, 2
