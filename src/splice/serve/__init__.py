"""``splice serve``: one long-lived server for a team (see :mod:`splice.serve.app`)."""
