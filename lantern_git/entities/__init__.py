"""The entity part, ``store.entities``: the people, projects and hosts records and evidence name."""
