"""docs/entities.md's session, run as written: every ``$`` command of its console blocks in a
real shell, in a new store, its output compared with the page's."""

from __future__ import annotations

from support.sessions import ROOT, console_blocks, run_steps, session_env

PAGE = ROOT / "docs" / "entities.md"
SECTION = "## A session"


def test_the_entities_session_runs_as_written(tmp_path):
    env = session_env(tmp_path)
    env["HOME"] = str(tmp_path)
    env.pop("LANTERN_STORE", None)
    steps = [step for block in console_blocks(SECTION, PAGE) for step in block]
    (first, nothing), rest = steps[0], steps[1:]
    assert first.startswith("mkdir ~/entities-tour && cd ~/entities-tour") and nothing == []
    run_steps([(first, nothing)], tmp_path, env)
    run_steps(rest, tmp_path / "entities-tour", env)
