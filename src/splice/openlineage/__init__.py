"""OpenLineage run events: emitted for every run Splice makes (:mod:`splice.openlineage.emit`) and
received from other tools' integrations (:mod:`splice.openlineage.receive`)."""
