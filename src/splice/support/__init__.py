"""Small modules any layer may use, importing only each other and :mod:`splice.errors`: the
clock, names, numbers, principals, captured tool output, fault points, the machine's own faults,
processes, the SQLMesh import shim and the one HTTP transport."""
