"""The public operations, shared by the CLI, the MCP tools and the server. Each takes an open
Workspace (:func:`open_workspace`).

Every way in calls this module and nothing below it, and nothing below imports it back
(:mod:`splice.layers`, checked by tests/test_layers.py). What an interface needs from a
lower layer (a renderer, an exit status) is re-exported here as a thin wrapper.

The operations live in :mod:`splice.api.core` (graph, lineage, runs, plans, incidents),
:mod:`splice.api.repair` (repairs, decisions, keys, the audit log) and :mod:`splice.api.reads`
(reads for people and agents, notifications, what the web page shows) and
:mod:`splice.api.grants` (access grants) and :mod:`splice.api.migrate` (migrations); this package re-exports
them all, so callers write ``from splice import api`` and ``api.NAME``.
"""

from splice.api.core import *  # noqa: F403
from splice.api.grants import *  # noqa: F403
from splice.api.local import *  # noqa: F403
from splice.api.migrate import *  # noqa: F403
from splice.api.reads import *  # noqa: F403
from splice.api.repair import *  # noqa: F403
