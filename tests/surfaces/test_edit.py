"""memory edit, with a real editor process: a small script set as $EDITOR or $VISUAL."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.cli import lantern
from support.stores import git, snapshot

from lantern_git.errors import StoreError, UncommittedChanges, ValidationError
from lantern_git.git.repo import parse_trailers
from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path

# The editor: each run applies the next step of a plan (replacements, or a whole new text),
# logs the path it was given, and exits with the step's status.
FAKE_EDITOR = textwrap.dedent(
    """
    import json, sys
    plan_path, target = sys.argv[1], sys.argv[-1]
    with open(plan_path) as f:
        plan = json.load(f)
    runs = plan.setdefault("runs", [])
    runs.append(target)
    step = plan["steps"][min(len(runs), len(plan["steps"])) - 1]
    with open(target, encoding="utf-8") as f:
        text = f.read()
    for old, new in step.get("replace", []):
        text = text.replace(old, new)
    if "append" in step:
        text += step["append"]
    if "text" in step:
        text = step["text"]
    with open(target, "w", encoding="utf-8") as f:
        f.write(text)
    with open(plan_path, "w") as f:
        json.dump(plan, f)
    sys.exit(step.get("exit", 0))
    """
)


@pytest.fixture
def editor(tmp_path):
    """A function that installs a plan and returns the editor command for it."""
    folder = tmp_path / "editor dir"  # a space, so $EDITOR must be split like a shell would
    folder.mkdir()
    script = folder / "fake editor.py"
    script.write_text(FAKE_EDITOR)
    plan = folder / "plan.json"

    class Editor:
        def __call__(self, *steps) -> str:
            plan.write_text(json.dumps({"steps": list(steps)}))
            return f'{sys.executable} "{script}" "{plan}"'

        @property
        def runs(self) -> list[str]:
            return json.loads(plan.read_text()).get("runs", [])

    return Editor()


def backdate(store_path: Path, record_id: str) -> None:
    path = store_path / record_path(record_id)
    text = path.read_text()
    record = Record.from_markdown(text)
    text = text.replace(f"created_at: {record.created_at}", "created_at: 1700000000")
    path.write_text(text.replace(f"updated_at: {record.updated_at}", "updated_at: 1700000000"))
    git(store_path, "commit", "-qam", "backdate")


def add(store_path, content="Ana drinks tea") -> str:
    result = lantern("memory", "add", content, "--kind", "preference", "--quiet", cwd=store_path)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_valid_edit_is_committed_with_updated_at_bumped(store_path, editor):
    record_id = add(store_path)
    backdate(store_path, record_id)
    command = editor({"replace": [["priority: 50", "priority: 85"], ["tea", "green tea"]]})
    result = lantern(
        "memory", "edit", record_id[:6], "--json", cwd=store_path, env={"EDITOR": command}
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["priority"] == 85 and data["content"] == "Ana drinks green tea"
    assert data["created_at"] == 1_700_000_000 and data["updated_at"] > 1_700_000_000
    # the editor was given a temporary copy, not the record file
    (edited,) = editor.runs
    assert Path(edited).name == f"{record_id}.md"
    assert not Path(edited).is_relative_to(store_path) and not os.path.exists(edited)
    diff = git(store_path, "show", "--format=", "HEAD")
    changed = [
        line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert changed == [
        "-priority: 50",
        "+priority: 85",
        "-updated_at: 1700000000",
        f"+updated_at: {data['updated_at']}",
        "-Ana drinks tea",
        "+Ana drinks green tea",
    ]
    trailers = parse_trailers(git(store_path, "log", "-1", "--format=%B"))
    assert trailers["Lantern-Op"] == ["edit"] and trailers["Lantern-Record"] == [record_id]
    assert trailers["Lantern-Actor"] == ["cli"]
    assert git(store_path, "status", "--porcelain") == ""
    listed = json.loads(lantern("memory", "list", "--json", cwd=store_path).stdout)
    assert listed[0]["content"] == "Ana drinks green tea"


def test_visual_wins_over_editor(store_path, editor):
    record_id = add(store_path)
    command = editor({"replace": [["urgency: 0", "urgency: 9"]]})
    env = {"VISUAL": command, "EDITOR": "false-editor-that-does-not-exist"}
    result = lantern("memory", "edit", record_id, "--json", cwd=store_path, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["urgency"] == 9


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ({"replace": [["urgency: 0", "urgency: 101"]]}, ":7: urgency: must be between 0 and 100"),
        ({"replace": [["kind: preference", "kind: whim"]]}, ":3: kind: must be one of"),
        ({"replace": [["status: active", "status: [x"]]}, "invalid YAML"),
        ({"replace": [["Ana drinks tea", "   "]]}, "content: must not be empty"),
        ({"text": "no front matter\n"}, ":1: file must start with a '---' front matter fence"),
    ],
)
def test_invalid_edit_is_refused_and_the_record_stays_byte_identical(
    store_path, editor, step, expected
):
    record_id = add(store_path)
    before = snapshot(store_path)
    result = lantern(
        "memory",
        "edit",
        record_id,
        cwd=store_path,
        env={"EDITOR": editor(step)},
        input="",
    )
    assert result.returncode == 2
    assert expected in result.stderr and record_path(record_id) in result.stderr
    assert snapshot(store_path) == before


def test_changing_the_id_is_refused(store_path, editor):
    record_id = add(store_path)
    other = "0123456789abcdef"
    before = snapshot(store_path)
    result = lantern(
        "memory",
        "edit",
        record_id,
        "--json",
        cwd=store_path,
        env={"EDITOR": editor({"replace": [[f"id: {record_id}", f"id: {other}"]]})},
    )
    assert result.returncode == 2 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "id_changed" and f"{record_path(record_id)}:2: id:" in error["message"]
    assert snapshot(store_path) == before
    assert not (store_path / record_path(other)).exists()


def test_a_second_record_in_the_file_is_refused(store_path, editor):
    record_id = add(store_path)
    second = Record.new(kind="fact", content="Another record").to_markdown()
    before = snapshot(store_path)
    result = lantern(
        "memory",
        "edit",
        record_id,
        cwd=store_path,
        env={"EDITOR": editor({"append": second})},
    )
    assert result.returncode == 2
    assert f"{record_path(record_id)}:13: content: holds a second record" in result.stderr
    assert snapshot(store_path) == before


def test_saving_without_changes_makes_no_commit(store_path, editor):
    record_id = add(store_path)
    before = snapshot(store_path)
    result = lantern("memory", "edit", record_id, cwd=store_path, env={"EDITOR": editor({})})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("unchanged ")
    assert snapshot(store_path) == before


def test_an_editor_that_fails_changes_nothing(store_path, editor):
    record_id = add(store_path)
    before = snapshot(store_path)
    step = {"replace": [["urgency: 0", "urgency: 5"]], "exit": 3}
    result = lantern("memory", "edit", record_id, cwd=store_path, env={"EDITOR": editor(step)})
    assert result.returncode == 1 and "exited with status 3" in result.stderr
    assert snapshot(store_path) == before


@pytest.mark.parametrize(
    "template",
    [
        "true; touch '{marker}'",
        "$(touch '{marker}')",
        "`touch '{marker}'`",
        "true | touch '{marker}'",
    ],
)
def test_the_editor_is_never_run_through_a_shell(store_path, tmp_path, template):
    """$EDITOR is split into words and run as a program: shell syntax in it is not obeyed."""
    record_id = add(store_path)
    marker = tmp_path / "shell ran"
    before = snapshot(store_path)
    command = template.format(marker=marker)
    result = lantern("memory", "edit", record_id, "--json", cwd=store_path, env={"EDITOR": command})
    # The first word ("true;", "$(touch", "`touch", "true") is the program. Only the last
    # form names a real one: true, given "|", "touch", the marker and the file, changes nothing.
    if template.startswith("true |"):
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["id"] == record_id
    else:
        assert result.returncode == 1 and result.stdout == ""
        error = json.loads(result.stderr)["error"]
        assert error["code"] == "editor_failed"
        assert error["message"].startswith(f"cannot run the editor {command.split()[0]!r}")
    assert not marker.exists()
    assert snapshot(store_path) == before


def test_no_editor_configured(store_path):
    record_id = add(store_path)
    env = {k: v for k, v in os.environ.items() if k not in ("EDITOR", "VISUAL")}
    result = subprocess.run(
        [sys.executable, "-m", "lantern_git", "memory", "edit", record_id],
        cwd=store_path,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2 and "set $VISUAL or $EDITOR" in result.stderr


def run_on_terminal(store_path, record_id, command, answers: str):
    """Run memory edit with stdin on a pseudo-terminal, typing ``answers``."""
    master, slave = pty.openpty()
    env = dict(os.environ, EDITOR=command)
    env.pop("VISUAL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lantern_git", "memory", "edit", record_id],
        cwd=store_path,
        env=env,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(slave)
    os.write(master, answers.encode())
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
    return proc.returncode, out, err


def test_on_a_terminal_an_invalid_edit_is_offered_again(store_path, editor):
    record_id = add(store_path)
    command = editor(
        {"replace": [["priority: 50", "priority: 500"]]},
        {"replace": [["priority: 500", "priority: 60"]]},
    )
    code, out, err = run_on_terminal(store_path, record_id, command, "y\n")
    assert code == 0, err
    assert ":6: priority: must be between 0 and 100" in err and "edit again? [Y/n]" in err
    assert len(editor.runs) == 2
    assert editor.runs[0] == editor.runs[1]  # the second run keeps what was typed
    assert out.startswith("edited ")
    assert "priority: 60\n" in (store_path / record_path(record_id)).read_text()
    assert git(store_path, "status", "--porcelain") == ""


def test_on_a_terminal_declining_to_edit_again_leaves_the_record(store_path, editor):
    record_id = add(store_path)
    before = snapshot(store_path)
    command = editor({"replace": [["priority: 50", "priority: 500"]]})
    code, _, err = run_on_terminal(store_path, record_id, command, "n\n")
    assert code == 2 and "edit again? [Y/n]" in err
    assert len(editor.runs) == 1
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- library


def test_library_edit_refuses_uncommitted_hand_edits(store, store_path):
    record = store.add("Ana drinks tea", kind="preference")
    path = store_path / record_path(record.id)
    path.write_text(path.read_text().replace("urgency: 0", "urgency: 1"))
    with pytest.raises(UncommittedChanges):
        store.begin_edit(record.id)


def test_library_edit_refuses_when_the_file_changed_meanwhile(store, store_path):
    record = store.add("Ana drinks tea", kind="preference")
    session = store.begin_edit(record.id)
    try:
        edited = session.original_text.replace("urgency: 0", "urgency: 3")
        store.update(record.id, priority=70)  # another writer, while the editor is open
        before = snapshot(store_path)
        with pytest.raises(StoreError, match="changed while it was being edited"):
            store.apply_edit(record.id, session.original_text, edited)
        assert snapshot(store_path) == before
    finally:
        session.close()
    assert not os.path.exists(session.path)


def test_library_apply_edit_validates(store, store_path):
    record = store.add("Ana drinks tea", kind="preference")
    text = (store_path / record_path(record.id)).read_text()
    with pytest.raises(ValidationError) as err:
        store.apply_edit(record.id, text, text.replace("confidence: 1.0", "confidence: 7"))
    assert err.value.field == "confidence" and err.value.line == 8
    changed = store.apply_edit(record.id, text, text.replace("urgency: 0", "urgency: 4"))
    assert changed.urgency == 4 and store.get(record.id).urgency == 4
