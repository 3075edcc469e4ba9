"""The workspace's checks (``splice doctor``): the joined graph's (:mod:`.checks`), the warehouses'
(:mod:`.warehouse`), the server's (:mod:`.server`), and the service that runs them."""
