"""The workspace under both halves: the root, git, lock, indexes and the one write transaction every
writer uses."""
