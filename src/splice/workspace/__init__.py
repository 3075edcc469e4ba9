"""The :class:`~splice.workspace.core.Workspace` (a project's tools, warehouse and state, opened
once) and the graph cache that spares reading commands from loading dbt or SQLMesh."""
