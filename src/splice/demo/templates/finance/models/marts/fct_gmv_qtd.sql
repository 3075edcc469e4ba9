with daily as (
    select
        booking_date,
        cast(sum(bookings) as bigint) as bookings,
        sum(gmv_usd) as gmv_usd
    from {{ ref('stg_gmv_daily') }}
    group by booking_date
)

select
    booking_date,
    cast(date_trunc('quarter', booking_date) as date) as quarter_start,
    bookings,
    gmv_usd,
    sum(gmv_usd) over (
        partition by date_trunc('quarter', booking_date)
        order by booking_date
        rows between unbounded preceding and current row
    ) as gmv_usd_qtd
from daily
