"""``lantern mcp``: the store's tools over the Model Context Protocol (stdio)."""
