"""``splice.toml``: the workspace configuration (:mod:`.workspace`), and its sections for
notifications, orchestrators and ``splice serve``."""
