"""The README's five-minute tour, run as written: every ``$`` command of its console blocks in a
real shell, in a new store, its output compared with the README's."""

from __future__ import annotations

from support.sessions import ROOT, console_blocks, run_steps, session_env

README = ROOT / "README.md"
SECTION = "## A five-minute tour"


def test_the_readme_tour_runs_as_written(tmp_path):
    env = session_env(tmp_path)
    env["HOME"] = str(tmp_path)
    env.pop("LANTERN_STORE", None)
    blocks = console_blocks(SECTION, README)
    assert len(blocks) == 3
    steps = [step for block in blocks for step in block]
    (first, nothing), rest = steps[0], steps[1:]
    # The first line makes the store and enters its folder; a shell keeps that folder for the
    # lines after it, so they run there.
    assert first.startswith("mkdir ~/lantern-tour && cd ~/lantern-tour") and nothing == []
    run_steps([(first, nothing)], tmp_path, env)
    run_steps(rest, tmp_path / "lantern-tour", env)
