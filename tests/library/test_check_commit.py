"""lantern check and lantern commit: hand edits validated before they become history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.cli import lantern
from support.stores import git, init_repo, snapshot

from lantern_git.errors import CheckFailed
from lantern_git.git.repo import parse_trailers
from lantern_git.memory.checker import HandEditsInvalid
from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path
from lantern_git.store import Store

REPO = Path(__file__).resolve().parents[2]


def edit_file(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def messages(report) -> list[str]:
    return [str(p) for p in report.problems]


# ---------------------------------------------------------------------------- check


def test_check_passes_on_a_clean_store(store):
    store.add("Ana drinks tea", kind="preference")
    store.add("Bo drinks coffee", kind="preference")
    report = store.check()
    assert report.ok and report.checked == 2


def test_check_reports_each_problem_with_path_and_line(store, store_path):
    a = store.add("Ana drinks tea", kind="preference")
    b = store.add("Bo drinks coffee", kind="preference")
    c = store.add("Cy drinks water", kind="preference")
    d = store.add("Di drinks juice", kind="preference")
    edit_file(store_path / record_path(a.id), "priority: 50", "priority: 500")
    edit_file(store_path / record_path(b.id), "kind: preference", "kind: wish")
    edit_file(store_path / record_path(c.id), "status: active", "status: active: yes")
    edit_file(store_path / record_path(d.id), f"id: {d.id}", f"id: {a.id}")
    report = store.check()
    assert not report.ok
    got = messages(report)
    assert f"{record_path(a.id)}:6: priority: must be between 0 and 100, got 500" in got
    assert any(m.startswith(f"{record_path(b.id)}:3: kind: must be one of") for m in got)
    assert any(m.startswith(f"{record_path(c.id)}:5: invalid YAML") for m in got)
    assert f"{record_path(d.id)}:2: id: {a.id} does not match the file name {d.id}" in got


def test_check_reports_files_outside_the_layout_and_duplicates(store, store_path):
    record = store.add("Ana drinks tea", kind="preference")
    text = (store_path / record_path(record.id)).read_text()
    (store_path / "memory" / "x.md").write_text(text)
    shard = store_path / "memory" / record.id[:2]
    (shard / "notanid.md").write_text(text)
    wrong = store_path / "memory" / "zz"
    wrong.mkdir()
    (wrong / f"{record.id}.md").write_text(text)
    report = store.check()
    got = messages(report)
    assert "memory/x.md: is outside the store layout; records live at memory/<aa>/<id>.md" in got
    assert any(m.startswith(f"memory/{record.id[:2]}/notanid.md: is not named") for m in got)
    assert any(m.startswith(f"memory/zz/{record.id}.md: is in the wrong folder") for m in got)
    duplicates = [m for m in got if "duplicate id" in m]
    assert len(duplicates) == 4  # x.md, notanid.md, zz/, and the real file each name the others
    assert any(m.startswith(record_path(record.id)) for m in duplicates)


def test_cli_check_exit_codes_and_json(store_path):
    record_id = lantern("memory", "add", "Tea", "--kind", "fact", "--quiet", cwd=store_path)
    record_id = record_id.stdout.strip()
    ok = lantern("check", "--json", cwd=store_path)
    assert ok.returncode == 0 and json.loads(ok.stdout) == {
        "ok": True,
        "checked": 1,
        "problems": [],
    }
    edit_file(store_path / record_path(record_id), "urgency: 0", "urgency: lots")
    before = snapshot(store_path)
    bad = lantern("check", cwd=store_path)
    assert bad.returncode == 4
    assert bad.stdout.startswith(f"{record_path(record_id)}:7: urgency: must be an integer")
    assert bad.stdout.count("\n") == 1
    assert "Error: 1 problem" in bad.stderr
    bad_json = lantern("check", "--json", cwd=store_path)
    assert bad_json.returncode == 4
    data = json.loads(bad_json.stdout)
    assert data["ok"] is False
    assert data["problems"][0]["path"] == record_path(record_id)
    assert data["problems"][0]["line"] == 7
    assert snapshot(store_path) == before
    listed = lantern("memory", "list", cwd=store_path)
    assert listed.returncode == 0 and "warning: skipped" in listed.stderr


def test_the_pre_commit_hook_stops_a_plain_git_commit_of_a_broken_record(
    store, store_path, tmp_path
):
    """The hook as published in .pre-commit-hooks.yaml, run by the real pre-commit on a real
    ``git commit``; the language becomes ``system`` so no hook environment is downloaded."""
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    hook = dict(next(h for h in hooks if h["id"] == "lantern-check"), language="system")
    config = {"repos": [{"repo": "local", "hooks": [hook]}]}
    (store_path / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    git(store_path, "add", ".pre-commit-config.yaml")
    git(store_path, "commit", "-qm", "pre-commit config")
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # Another valid store in LANTERN_STORE must not stand in for the one being committed.
    other = tmp_path / "other"
    init_repo(other)
    Store.init(str(other)).close()
    env["LANTERN_STORE"] = str(other)
    pre_commit = [sys.executable, "-m", "pre_commit"]
    subprocess.run([*pre_commit, "install"], cwd=store_path, env=env, check=True)

    record = store.add("Ana drinks tea", kind="preference")
    path = store_path / record_path(record.id)
    edit_file(path, "priority: 50", "priority: 500")
    git(store_path, "add", "-A")
    head = git(store_path, "rev-parse", "HEAD")
    refused = subprocess.run(
        ["git", "commit", "-qm", "hand edit"], cwd=store_path, env=env, capture_output=True
    )
    assert refused.returncode != 0
    assert f"{record_path(record.id)}:6: priority" in refused.stderr.decode()
    assert git(store_path, "rev-parse", "HEAD") == head

    edit_file(path, "priority: 500", "priority: 60")
    git(store_path, "add", "-A")
    accepted = subprocess.run(
        ["git", "commit", "-qm", "hand edit"], cwd=store_path, env=env, capture_output=True
    )
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert git(store_path, "rev-parse", "HEAD") != head


# ---------------------------------------------------------------------------- commit


def test_commit_sets_updated_at_and_touches_only_that_line(store, store_path):
    record = store.add("Ana drinks tea", kind="preference")
    path = store_path / record_path(record.id)
    edit_file(path, f"updated_at: {record.updated_at}", "updated_at: 1700000000")
    edit_file(path, f"created_at: {record.created_at}", "created_at: 1700000000")
    git(store_path, "commit", "-qam", "backdate")
    edit_file(path, "priority: 50", "priority: 65")
    edit_file(path, "Ana drinks tea", "Ana drinks green tea")
    result = store.commit_hand_edits("tea detail")
    assert result.records == [record.id] and result.updated == [record.id]
    diff = git(store_path, "show", "--format=", "HEAD")
    changed = [
        line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    committed = Record.from_markdown(path.read_text())
    assert changed == [
        "-priority: 50",
        "+priority: 65",
        "-updated_at: 1700000000",
        f"+updated_at: {committed.updated_at}",
        "-Ana drinks tea",
        "+Ana drinks green tea",
    ]
    assert committed.created_at == 1_700_000_000 and committed.updated_at > 1_700_000_000
    message = git(store_path, "log", "-1", "--format=%B")
    assert message.startswith("tea detail\n")
    trailers = parse_trailers(message)
    assert trailers["Lantern-Op"] == ["edit"] and trailers["Lantern-Record"] == [record.id]
    assert git(store_path, "status", "--porcelain") == ""
    assert store.list()[0].content == "Ana drinks green tea"


def test_commit_of_several_files_one_trailer_each_and_reformat_keeps_updated_at(store, store_path):
    a = store.add("Ana drinks tea", kind="preference")
    b = store.add("Bo drinks coffee", kind="preference")
    edit_file(store_path / record_path(a.id), "urgency: 0", "urgency: 20")
    # a comment changes the file but no field: committed as written, updated_at untouched
    edit_file(store_path / record_path(b.id), "urgency: 0\n", "urgency: 0\n# checked by hand\n")
    result = store.commit_hand_edits()
    assert sorted(result.records) == sorted([a.id, b.id]) and result.updated == [a.id]
    trailers = parse_trailers(git(store_path, "log", "-1", "--format=%B"))
    assert sorted(trailers["Lantern-Record"]) == sorted([a.id, b.id])
    assert git(store_path, "log", "-1", "--format=%s").strip() == "edit 2 records by hand"
    assert "# checked by hand" in (store_path / record_path(b.id)).read_text()
    assert store.get(b.id).updated_at == b.updated_at


def test_commit_of_a_new_hand_written_record(store, store_path):
    record = Record.new(kind="fact", content="Written by hand", now=1_700_000_000)
    path = store_path / record_path(record.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.to_markdown())
    result = store.commit_hand_edits()
    assert result.records == [record.id] and result.updated == []
    assert store.get(record.id) == record
    assert git(store_path, "status", "--porcelain") == ""


def test_commit_with_nothing_changed(store, store_path):
    store.add("Ana drinks tea", kind="preference")
    before = snapshot(store_path)
    result = store.commit_hand_edits()
    assert result.commit is None and result.records == []
    assert snapshot(store_path) == before


def test_commit_refuses_invalid_files_and_writes_nothing(store, store_path):
    a = store.add("Ana drinks tea", kind="preference")
    b = store.add("Bo drinks coffee", kind="preference")
    edit_file(store_path / record_path(a.id), "urgency: 0", "urgency: 20")
    edit_file(store_path / record_path(b.id), "confidence: 1.0", "confidence: 2")
    before = snapshot(store_path)
    with pytest.raises(HandEditsInvalid) as err:
        store.commit_hand_edits()
    assert err.value.exit_code == 4
    assert f"{record_path(b.id)}:8: confidence: must be between 0.0 and 1.0" in err.value.message
    assert snapshot(store_path) == before


def test_commit_refuses_a_deleted_record_file(store, store_path):
    a = store.add("Ana drinks tea", kind="preference")
    os.unlink(store_path / record_path(a.id))
    before = snapshot(store_path)
    with pytest.raises(CheckFailed, match="lantern commit never deletes records"):
        store.commit_hand_edits()
    assert snapshot(store_path) == before


def test_commit_refuses_a_file_outside_the_layout(store, store_path):
    (store_path / "memory").mkdir(exist_ok=True)
    (store_path / "memory" / "notes.md").write_text("just notes\n")
    before = snapshot(store_path)
    with pytest.raises(CheckFailed, match="outside the store layout"):
        store.commit_hand_edits()
    assert snapshot(store_path) == before


def test_cli_commit(store_path):
    record_id = lantern("memory", "add", "Tea", "--kind", "fact", "--quiet", cwd=store_path)
    record_id = record_id.stdout.strip()
    path = store_path / record_path(record_id)
    edit_file(path, "priority: 50", "priority: 101")
    before = snapshot(store_path)
    refused = lantern("commit", "-m", "x", "--json", cwd=store_path)
    assert refused.returncode == 4 and refused.stdout == ""
    error = json.loads(refused.stderr)["error"]
    assert error["code"] == "check_failed" and f"{record_path(record_id)}:6:" in error["message"]
    assert snapshot(store_path) == before
    edit_file(path, "priority: 101", "priority: 10")
    done = lantern(
        "commit", "-m", "lower priority", "--reason", "less urgent", "--json", cwd=store_path
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["records"] == [record_id] and data["updated_at_set"] == [record_id]
    assert data["commit"] == git(store_path, "rev-parse", "HEAD").strip()
    trailers = parse_trailers(git(store_path, "log", "-1", "--format=%B"))
    assert trailers["Lantern-Actor"] == ["cli"] and trailers["Lantern-Reason"] == ["less urgent"]
    nothing = lantern("commit", cwd=store_path)
    assert nothing.returncode == 0 and "nothing to commit" in nothing.stdout


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_commit_refuses_a_fifo_or_a_folder_at_a_record_path_as_check_reports_it(store_path, kind):
    """git's status lists neither, so commit once found nothing to commit (exit 0) where
    check failed: both now report the same problem, exit 4, and nothing is written."""
    record_id = lantern("memory", "add", "Tea", "--kind", "fact", "--quiet", cwd=store_path)
    record_id = record_id.stdout.strip()
    edit_file(store_path / record_path(record_id), "priority: 50", "priority: 60")
    odd = store_path / "memory" / "ab" / ("ab" * 8 + ".md")
    odd.parent.mkdir(exist_ok=True)
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.mkdir()
    what = "a named pipe (FIFO)" if kind == "fifo" else "a folder"
    problem = f"memory/ab/{'ab' * 8}.md: is not a regular file but {what}"
    before = snapshot(store_path)
    check = lantern("check", "--json", cwd=store_path)
    assert check.returncode == 4
    [reported] = json.loads(check.stdout)["problems"]
    refused = lantern("commit", "--json", cwd=store_path)
    assert refused.returncode == 4 and refused.stdout == ""
    error = json.loads(refused.stderr)["error"]
    assert error["code"] == "check_failed"
    assert problem in error["message"] and str(reported["message"]) in error["message"]
    text = lantern("commit", cwd=store_path)
    assert text.returncode == 4 and "nothing to commit" not in text.stdout
    assert problem in text.stderr
    assert snapshot(store_path) == before


def test_lantern_writes_refuse_while_a_hand_edit_is_uncommitted_then_work_after_commit(
    store, store_path
):
    a = store.add("Ana drinks tea", kind="preference")
    edit_file(store_path / record_path(a.id), "urgency: 0", "urgency: 5")
    result = lantern("memory", "archive", a.id, cwd=store_path)
    assert result.returncode == 1 and "lantern commit" in result.stderr
    store.commit_hand_edits()
    assert store.archive(a.id).urgency == 5


# ---------------------------------------------------------------------------- hypothesis

VALID = {
    "kind": st.sampled_from(["fact", "preference", "goal", "task_state"]),
    "scope": st.sampled_from(["global", "user:ana", "project:x-1"]),
    "status": st.sampled_from(["active", "archived", "superseded"]),
    "priority": st.integers(0, 100),
    "urgency": st.integers(0, 100),
    "confidence": st.floats(0.0, 1.0, allow_nan=False),
    "expires_at": st.one_of(st.none(), st.integers(0, 9_999_999_999)),
}
INVALID = {
    "kind": st.sampled_from(["wish", "", "Fact", "123"]),
    "scope": st.sampled_from(["has space", "user:", "*", "user:a b"]),
    "status": st.sampled_from(["deleted", "ACTIVE", "[x]"]),
    "priority": st.one_of(st.integers(101, 10**6), st.integers(-(10**6), -1), st.just("high")),
    "urgency": st.one_of(st.integers(101, 10**6), st.just(1.5), st.just("null")),
    "confidence": st.one_of(st.floats(1.0001, 100.0), st.floats(-100.0, -0.0001), st.just("sure")),
    "expires_at": st.one_of(st.integers(-(10**6), -1), st.just("tomorrow")),
}
CONTENT_VALID = st.text(alphabet="abcdefgh ijk,.", min_size=1, max_size=40).filter(str.strip)
CONTENT_INVALID = st.sampled_from(["", "   ", "\n\n"])


@st.composite
def hand_edits(draw):
    """A record file's front matter values (each valid or not) and whether all are valid."""
    values: dict = {}
    valid = True
    for name in VALID:
        good = draw(st.integers(0, 9)) > 0
        values[name] = draw(VALID[name] if good else INVALID[name])
        valid = valid and good
    good_content = draw(st.integers(0, 5)) > 0
    content = draw(CONTENT_VALID if good_content else CONTENT_INVALID)
    return values, content, valid and good_content


def scalar(value) -> str:
    """YAML text for a value, as a person would type it (YAML 1.1: a float needs a '.')."""
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def render(record_id: str, created: int, values: dict, content: str) -> str:
    lines = ["---", f"id: {record_id}"]
    for key in ("kind", "scope", "status", "priority", "urgency", "confidence"):
        lines.append(f"{key}: {scalar(values[key])}")
    lines += [f"created_at: {created}", f"updated_at: {created}"]
    if values["expires_at"] is not None:
        lines.append(f"expires_at: {scalar(values['expires_at'])}")
    return "\n".join(lines) + "\n---\n" + content + "\n"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edit=hand_edits())
@example(  # found by hypothesis: a subnormal confidence, written as YAML writes floats
    edit=(
        {
            "kind": "fact",
            "scope": "global",
            "status": "active",
            "priority": 0,
            "urgency": 0,
            "confidence": 5e-324,
            "expires_at": None,
        },
        "a",
        True,
    )
)
def test_random_hand_edits_against_check_and_commit(edit):
    values, content, valid = edit
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        init_repo(root)
        store = Store.init(str(root))
        record = store.add("Original text", kind="fact")
        path = root / record_path(record.id)
        path.write_text(render(record.id, record.created_at, values, content))
        report = store.check()
        assert report.ok == valid, messages(report)
        before = snapshot(root)
        if valid:
            result = store.commit_hand_edits()
            assert result.records == [record.id]
            committed = store.get(record.id)
            assert committed.priority == values["priority"]
            assert committed.content == content.strip()
            assert git(root, "status", "--porcelain") == ""
            assert store.check().ok
        else:
            assert all(p.path == record_path(record.id) for p in report.problems)
            assert all(p.line is not None for p in report.problems)
            with pytest.raises(CheckFailed):
                store.commit_hand_edits()
            assert snapshot(root) == before
        store.close()
