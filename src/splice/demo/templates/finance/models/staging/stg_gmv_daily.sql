select
    booking_date,
    currency,
    bookings,
    gmv_local,
    gmv_usd
from {{ source('pricing', 'agg_gmv_daily') }}
