"""lantern's settings, read in one place (lantern_git/core/config.py): the LANTERN_* variables and
lantern.yaml's keys become typed values; a value that does not parse fails where it is used,
with its code, and nowhere else."""

from __future__ import annotations

import json

import pytest
from support.cli import lantern
from support.stores import snapshot

from lantern_git.core.config import Environment, StoreSettings, value
from lantern_git.errors import InvalidInput


def test_the_environment_is_read_into_typed_values():
    env = Environment.read(
        {
            "LANTERN_STORE": "~/memory",
            "LANTERN_AUTHOR": "Ana <ana@example.com>",
            "LANTERN_REVIEW": " Yes ",
            "LANTERN_REVIEW_NAME": "agent",
            "LANTERN_EMBEDDER": "pkg.mod:Embedder",
            "LANTERN_LOCK_TIMEOUT": "2.5",
            "LANTERN_DEBUG": "1",
            "LANTERN_PROGRESS": "never",
        }
    )
    assert env == Environment(
        store="~/memory",
        author="Ana <ana@example.com>",
        review=True,
        review_name="agent",
        embedder="pkg.mod:Embedder",
        lock_timeout=2.5,
        debug=True,
        progress="never",
    )
    # Unset and empty are the same: every default.
    assert Environment.read({}) == Environment.read({"LANTERN_STORE": "", "LANTERN_AUTHOR": ""})
    assert Environment.read({"LANTERN_REVIEW": "0"}).review is False
    # A wait that is not a non-negative number is the default, not an error.
    for bad in ("soon", "-1", "nan"):
        assert Environment.read({"LANTERN_LOCK_TIMEOUT": bad}).lock_timeout == 10.0


def test_a_bad_value_is_kept_as_its_error_and_raised_where_it_is_used():
    env = Environment.read({"LANTERN_REVIEW": "maybe", "LANTERN_EMBEDDER": "has space"})
    for setting, code in ((env.review, "invalid_review"), (env.embedder, "invalid_embedder")):
        with pytest.raises(InvalidInput) as raised:
            value(setting)
        assert raised.value.code == code and raised.value.exit_code == 2
    settings = StoreSettings.parse(
        {"review": "sometimes", "sync_review_branches": True, "embedder": "x:y"},
        "~/store/lantern.yaml",
        1,
    )
    assert value(settings.sync_review_branches) is True
    with pytest.raises(InvalidInput, match="'review' must be true or false, got 'sometimes'"):
        value(settings.review)
    with pytest.raises(InvalidInput, match="only from the LANTERN_EMBEDDER environment"):
        value(settings.embedder)


def test_a_bad_review_variable_fails_a_write_but_not_a_read(store_path):
    before = snapshot(store_path)
    env = {"LANTERN_REVIEW": "maybe"}
    listed = lantern("memory", "list", "--json", "--store", str(store_path), env=env)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    added = lantern(
        "memory", "add", "x", "--kind", "fact", "--json", "--store", str(store_path), env=env
    )
    assert added.returncode == 2
    assert json.loads(added.stderr)["error"]["code"] == "invalid_review"
    assert snapshot(store_path) == before
