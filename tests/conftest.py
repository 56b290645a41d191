"""The suite's one conftest: it loads the shared fixtures from tests/support/ (see its
``__init__``); what the tests share beyond fixtures is imported from there by name."""

pytest_plugins = ["support.env", "support.stores", "support.cli"]
