"""What the tests share, in one place: loaded through ``pytest_plugins`` in tests/conftest.py
(the fixtures) and imported by name (``from support.cli import lantern``) for the rest.

- ``env``: every test's own HOME, git identity and settings (autouse fixtures).
- ``stores``: real git repositories and stores in temporary folders (``store_path``, ``store``,
  ``make_store``), plain ``git``, and the ``snapshot`` a refused write must leave unchanged.
- ``cli``: the one way to run the CLI in this process (``invoke``, and the ``run`` fixture on
  the test's store) and the one way to run it as a subprocess (``lantern``, ``start_lantern``).
- ``processes``: bounded waits on processes and threads.
- ``mcp``, ``serve``, ``reliability``, ``format1``: what the tests of those parts share.
"""
