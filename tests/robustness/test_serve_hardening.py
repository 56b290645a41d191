"""``lantern serve``'s hardening, against a real server process over real HTTP: a write sent
from another origin changes nothing, a bad parameter is a 400 naming it (never a 500), and a
read-only server writes nothing, the repair of a cut-off write included."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import cli_env, lantern
from support.serve import Markup, serving
from support.stores import make_store

from lantern_git.store import Store


def add(path: Path, content: str) -> str:
    made = lantern("memory", "add", content, "--kind", "fact", "--json", store=path)
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout)["id"]


def agent_writes(path: Path, content: str) -> str:
    """A pending write, as ``lantern mcp --review`` makes it (the same library call)."""
    store = Store(str(path), actor="mcp", review=True)
    try:
        return store.add(content, kind="fact").id
    finally:
        store.close()


def refs(path: Path) -> dict[str, str]:
    repo = pygit2.Repository(str(path))
    return {name: str(repo.references[name].target) for name in repo.references}


def tree_bytes(path: Path) -> dict[str, bytes]:
    """Every file of the working tree (tracked or not) and of .git, byte for byte; derived
    state (.lantern/, never committed) aside."""
    found = {}
    for file in sorted(path.rglob("*")):
        relative = file.relative_to(path)
        if file.is_file() and relative.parts[0] != ".lantern":
            found[str(relative)] = file.read_bytes()
    return found


# ---------------------------------------------------------------------------- origin


@pytest.fixture
def store(tmp_path) -> Path:
    return make_store(tmp_path / "store")


def test_a_post_from_another_origin_changes_nothing_even_with_cookie_and_csrf(store):
    pending = agent_writes(store, "an agent's pending fact")
    before = refs(store)
    with serving(store) as server:
        csrf = server.csrf()

        def tip() -> str:
            return refs(store)["refs/heads/lantern/review/mcp"]

        form = f"csrf={csrf}&id={pending}&branch=mcp&tip={tip()}"
        own = f"http://{server.host}:{server.port}"
        foreign = [
            {"Origin": "http://evil.com"},
            {"Origin": "http://evil.com", "Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "cross-site"},
            # Another port of the same host is the same site, not the same origin.
            {"Origin": f"http://{server.host}:{server.port + 1}", "Sec-Fetch-Site": "same-site"},
            {"Sec-Fetch-Site": "same-site"},
            {"Origin": "null"},
            {"Origin": f"https://{server.host}:{server.port}"},
            # The right origin cannot vouch for a request the browser calls cross-site.
            {"Origin": own, "Sec-Fetch-Site": "cross-site"},
        ]
        for headers in foreign:
            for action in ("/review/accept", "/review/reject"):
                status, text = server.request("POST", action, headers=headers, body=form)
                assert status == 403, (headers, action, status)
                assert "another site" in text
                assert refs(store) == before, headers
        # The same form from the server's own page goes through: the refusal above was the
        # origin's, not the form's. Chromium sends the second (the pages' no-referrer policy
        # hides the origin of their own forms).
        for headers in (
            {"Origin": own, "Sec-Fetch-Site": "same-origin"},
            {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        ):
            # The tip the page now shows: the first reject moved it.
            form = f"csrf={csrf}&id={pending}&branch=mcp&tip={tip()}"
            status, _ = server.request("POST", "/review/reject", headers=headers, body=form)
            assert status in (303, 404), (headers, status)  # 404: rejected already
            assert status != 404 or headers["Origin"] == "null"
        assert refs(store) != before


def test_a_post_naming_no_origin_is_judged_by_its_tokens(store):
    pending = agent_writes(store, "pending, accepted by a script")
    with serving(store) as server:
        tip = refs(store)["refs/heads/lantern/review/mcp"]
        form = f"csrf={server.csrf()}&id={pending}&branch=mcp&tip={tip}"
        status, _ = server.request("POST", "/review/accept", body=form)
        assert status == 303
    listed = lantern("memory", "list", "--json", store=store)
    assert pending in listed.stdout


def test_reads_from_another_origin_are_not_refused_by_the_origin_rule(store):
    """The rule guards writes; a cross-site GET still needs the token (SameSite=Strict keeps
    the cookie from it), so following a link from elsewhere is not broken by the rule."""
    add(store, "readable")
    with serving(store) as server:
        status, text = server.request("GET", "/", headers={"Sec-Fetch-Site": "cross-site"})
        assert status == 200 and "readable" in text


# ---------------------------------------------------------------------------- parameters

HUGE = "9" * 30


@pytest.mark.parametrize(
    ("target", "names"),
    [
        (f"/changes?limit={HUGE}", "limit: must be at most"),
        (f"/?limit={HUGE}", "limit: must be at most"),
        (f"/?offset={HUGE}", "offset: must be at most"),
        (f"/sources?limit={HUGE}", "limit: must be at most"),
        ("/sources?limit=-1", "limit: must be 0 or more"),
        ("/sources?offset=-1", "offset: must be 0 or more"),
        ("/changes?limit=-1", "limit: must be 0 or more"),
        ("/changes?limit=ten", "limit: expected a whole number"),
        ("/?mode=fuzzy", "mode: must be one of"),
        ("/?limit=" + "1" * 5000, "limit: expected a whole number"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(store, target, names):
    with serving(store) as server:
        status, text = server.request("GET", target)
        assert status == 400, (target, status, text[:300])
        assert names in Markup(text).text


def test_semantic_mode_without_the_extra_is_a_400_with_the_install_command_and_not_offered(
    store,
):
    add(store, "tabs over spaces")
    with serving(store) as server:
        status, text = server.request("GET", "/?q=tabs&mode=semantic")
        assert status == 400, text[:300]
        message = Markup(text).text
        assert "semantic_unavailable" in message
        assert "pip install 'lantern-git[semantic]'" in message
        status, text = server.request("GET", "/")
        offered = re.findall(r'<option value="([^"]*)"', text.split('name="mode"', 1)[1])
        assert offered[: offered.index("list") + 1] == ["", "keyword", "list"]
        assert "semantic" not in offered and "hybrid" not in offered


def test_limit_zero_lists_every_source_with_no_next_link(store):
    names = [f"note{n}.md" for n in range(3)]
    for name in names:
        made = lantern(
            "source", "add", "-", "--uri", f"session:{name}", input=f"{name}\n", store=store
        )
        assert made.returncode == 0, made.stderr
    with serving(store) as server:
        status, text = server.request("GET", "/sources?limit=0")
        assert status == 200
        listed = re.findall(r'href="/sources/([0-9a-f]+)"', text)
        assert len(listed) == 3
        assert "next →" not in text
        # And a page of two has a next page with the third.
        _, first = server.request("GET", "/sources?limit=2")
        _, second = server.request("GET", "/sources?limit=2&offset=2")
        paged = re.findall(r'href="/sources/([0-9a-f]+)"', first + second)
        assert paged == listed and "next →" in first and "next →" not in second


# ---------------------------------------------------------------------------- read-only


def test_a_read_only_server_leaves_a_cut_off_write_for_repair_and_shows_the_last_commit(store):
    kept = add(store, "the committed record")
    killed = lantern(
        "memory",
        "add",
        "cut off before its commit",
        "--kind",
        "fact",
        env=cli_env(LANTERN_FAULT="after-files"),
        store=store,
    )
    assert killed.returncode == -9, killed.stderr
    untracked = [p for p in (store / "memory").rglob("*.md") if kept not in p.name]
    assert untracked, "the kill left no half-written record file"
    before_files, before_refs = tree_bytes(store), refs(store)
    with serving(store, "--read-only") as server:
        for target in ("/", "/status", "/review", "/changes", "/sources", f"/records/{kept}"):
            status, text = server.request("GET", target)
            assert status == 200, (target, status, text[:300])
            assert "Recovery pending" in Markup(text).text, target
        _, listing = server.request("GET", "/?status=all")
        assert kept in listing and "cut off before its commit" not in listing
    assert tree_bytes(store) == before_files
    assert refs(store) == before_refs
    # A process that can write repairs it: the half-written file goes.
    repaired = lantern("memory", "list", "--json", store=store)
    assert repaired.returncode == 0
    assert all(not p.exists() for p in untracked)


# ---------------------------------------------------------------------------- every parameter

# Every page's query parameters (and the POSTs' form fields): a new route or parameter that is
# not here fails the first test below, so the property test cannot fall behind the app.
GET_PARAMS = {
    "/": [
        "scope",
        "kind",
        "status",
        "min_priority",
        "min_urgency",
        "include_expired",
        "at",
        "q",
        "mode",
        "pending",
        "limit",
        "offset",
    ],
    "/records/{record_id}": ["at", "pending"],
    "/entities/{key}": [],
    "/sources": ["kind", "limit", "offset"],
    "/sources/{source_id}": ["version"],
    "/review": ["done", "records", "commit"],
    "/changes": ["from", "to", "limit", "offset"],
    "/status": [],
}
POST_FIELDS = {
    "/review/accept": ["id", "all", "branch", "reason", "tip"],
    "/review/reject": ["id", "all", "branch", "reason", "tip"],
}

# What a person or a script may type: numbers far past any limit, negative ones, junk, unicode
# (control characters, bidi marks, surrogates' neighbours), the values the pages link to.
HUGE_NUMBERS = st.one_of(
    st.integers(min_value=2**63 - 2, max_value=10**30),
    st.integers(min_value=-(10**30), max_value=-1),
).map(str)
VALUES = st.one_of(
    st.integers().map(str),
    HUGE_NUMBERS,
    st.text(max_size=30),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.sampled_from(
        [
            "",
            "0",
            "1",
            "-1",
            "HEAD",
            "HEAD~99",
            "main",
            "all",
            "keyword",
            "semantic",
            "hybrid",
            "list",
            "fact",
            "user:*",
            "2026-12-01",
            "..",
            "../../etc/passwd",
            "9" * 400,
            "1e9",
            " 12 ",
            "\x00",
            "\u202e",
            "source:0123456789abcdef@ffff#L1-L2",
            "mcp",
        ]
    ),
)


@dataclass
class Busy:
    client: Any
    csrf: str
    ids: dict[str, str]


@pytest.fixture(scope="module")
def busy(tmp_path_factory) -> Iterator[Busy]:
    """A served store with a record citing a source, and a pending write."""
    from support.serve import served

    from lantern_git.evidence.sources import SourceInput

    path = make_store(tmp_path_factory.mktemp("busy") / "store")
    store = Store(str(path), actor="cli")
    try:
        [ingested] = store.sources.add([SourceInput(b"one\ntwo\n", "s.md", uri="session:s")])
        source = ingested.manifest.id
        record = store.add(
            "cites", kind="fact", source_refs=[f"source:{source}#L1"], entities=["person:ana"]
        ).id
    finally:
        store.close()
    agent_writes(path, "a pending record")
    with served(path) as (client, config):
        ids = {"record_id": record, "source_id": source, "key": "person:ana"}
        yield Busy(client, config.csrf, ids)


def test_the_property_test_names_every_route_of_the_app(busy):
    routes = {
        route.path: set(getattr(route, "methods", None) or ())
        for route in busy.client.app.routes
        if route.path != "/static"
    }
    assert {p for p, m in routes.items() if "GET" in m} == set(GET_PARAMS)
    assert {p for p, m in routes.items() if "POST" in m} == set(POST_FIELDS)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_value_of_any_parameter_is_a_5xx(busy, data):
    path = data.draw(st.sampled_from([*GET_PARAMS, *POST_FIELDS]))
    # A name no page reads goes with the others: it must be ignored.
    names = [*{**GET_PARAMS, **POST_FIELDS}[path], "unknown"]
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True))
    pairs = [(name, data.draw(VALUES)) for name in chosen]
    if path in POST_FIELDS:
        response = busy.client.post(path, data=dict([("csrf", busy.csrf), *pairs]))
    else:
        target = path.format(**busy.ids)
        response = busy.client.get(target, params=pairs)
    assert response.status_code < 500, (path, pairs, response.text[:500])
