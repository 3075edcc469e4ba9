"""Splice over MCP (the official ``mcp`` SDK): see :mod:`splice.mcp.server`."""
