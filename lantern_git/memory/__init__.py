"""The memory part: what the store does with records."""
