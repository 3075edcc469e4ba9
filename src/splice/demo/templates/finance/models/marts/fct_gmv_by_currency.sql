select
    cast(date_trunc('month', g.booking_date) as date) as month,
    g.currency,
    r.region,
    cast(sum(g.bookings) as bigint) as bookings,
    sum(g.gmv_local) as gmv_local,
    sum(g.gmv_usd) as gmv_usd
from {{ ref('stg_gmv_daily') }} as g
left join {{ ref('currency_regions') }} as r
    on g.currency = r.currency
group by 1, 2, 3
