"""What the tests share, in one place: loaded through ``pytest_plugins`` in tests/conftest.py
(the fixtures) and imported by name (``from support.cli import lantern``) for the rest. No
test imports from conftest or from another test file.

- ``env``: every test's own HOME, git identity and settings (autouse fixtures).
- ``stores``: real git repositories and stores in temporary folders (the ``store_path`` and
  ``store`` fixtures, ``make_store``, ``init_repo``), plain ``git``, the ``snapshot`` a refused
  write must leave unchanged, and ids that share a prefix (``colliding_contents``).
- ``cli``: the one way to run the CLI in this process (``invoke``, and the ``run`` fixture on
  the test's store) and the one way to run it as a subprocess (``lantern``, ``lantern_json``,
  ``start_lantern``, ``stderr_on_a_terminal``, ``as_reader``).
- ``processes``: bounded waits on processes and threads.
- ``mcp``, ``serve``, ``sync``, ``reliability``, ``semantic``, ``sessions``, ``format1``,
  ``architecture``: what the tests of those parts share.
"""
