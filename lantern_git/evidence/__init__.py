"""The evidence part: sources, their chunks, and the references records make to them."""
