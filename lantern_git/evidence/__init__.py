"""The evidence half: sources, their chunks, and the references records make to them."""
