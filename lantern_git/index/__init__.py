"""The search index: derived state over the record files, rebuilt from them at any time."""
