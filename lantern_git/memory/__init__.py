"""The memory half: what the store does with records."""
