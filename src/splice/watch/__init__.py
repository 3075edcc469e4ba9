"""Watching production between plans: metrics, their history, and detectors.

- :mod:`splice.watch.metrics`: declared metrics and default monitors, and their SQL;
- :mod:`splice.watch.detectors`: judging new points against each series' own history, one
  detector at a time in the order of its registry (:mod:`~splice.watch.panel` the data
  judged, :mod:`~splice.watch.robust` the robust statistics);
- :mod:`splice.watch.history`: the series, points and anomalies kept in Splice's state;
- :mod:`splice.watch.service`: :func:`watch`, what ``splice watch`` runs.
"""
