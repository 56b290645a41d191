"""The model: what a record and a source are, where their files live, how they merge."""
