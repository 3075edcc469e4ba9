"""Pull-request review across tools (``splice review``): what changed in each tool's terms, what
it reaches column by column (metrics, dashboards), and what it does to the data.

:func:`review` is the entry point; :class:`Review` is its result, plain data
(:meth:`Review.to_dict` for ``--json``, :func:`splice.review.render.markdown` for a PR comment).
"""

from splice.review.changes import NodeChange
from splice.review.service import Review, review

__all__ = ["NodeChange", "Review", "review"]
