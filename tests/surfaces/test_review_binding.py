"""Review binds to what the person saw (docs/review.md, "What you decide is what you saw"):
a decision carries the review branch's tip it was made on and changes nothing when anything
arrived since; a pending supersede is decided whole; the reviewer sees the writer's reason, the
content against the store's version and the evidence; hidden characters are shown and flagged.

Each test is black-box: real stores in temporary git repositories, the real CLI in a
subprocess, the web app over Starlette's test client, agents writing through the library as
``lantern mcp --review`` does."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pygit2
import pytest
from support.cli import lantern
from support.serve import MCP_BRANCH, Markup, opened, served
from support.stores import make_store, snapshot

from lantern_git.git.repo import parse_trailers


@pytest.fixture
def path(tmp_path) -> Path:
    return make_store(tmp_path / "store")


@contextmanager
def agent(path: Path):
    """An agent's store: its writes wait on lantern/review/mcp."""
    with opened(path, actor="mcp", review=True) as store:
        yield store


def state(path: Path) -> dict:
    """Everything a refused decision must leave as it was: the store's branch, its files, git
    status, and every review branch's tip."""
    repo = pygit2.Repository(str(path))
    refs = {r: str(repo.references[r].target) for r in repo.references if "review" in r}
    return {**snapshot(path), "refs": refs}


def branch_tip(path: Path, ref: str = MCP_BRANCH) -> str:
    repo = pygit2.Repository(str(path))
    return str(repo.references[ref].target)


def head_trailers(path: Path) -> dict[str, list[str]]:
    repo = pygit2.Repository(str(path))
    return parse_trailers(repo[repo.head.target].peel(pygit2.Commit).message)


def listed(path: Path) -> dict[str, dict]:
    """The store's branch's records (archived and superseded too), by id."""
    with opened(path) as store:
        return {r["id"]: r for r in (x.to_dict() for x in store.list(status="all"))}


def review_document(path: Path) -> dict:
    shown = lantern("review", "--json", store=path)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def error_of(result) -> dict:
    return json.loads(result.stderr)["error"]


# ---------------------------------------------------------------------------- 1. the tip


def test_review_json_gives_each_branch_its_full_tip(path):
    with agent(path) as store:
        store.add("an agent's fact", kind="fact")
    (branch,) = review_document(path)["branches"]
    assert branch["tip"] == branch_tip(path)
    assert len(branch["tip"]) == 40
    text = lantern("review", store=path)
    assert f"  tip {branch_tip(path)} " in text.stdout


def test_an_accept_after_the_agent_updated_the_record_is_refused_and_changes_nothing(path):
    """The race of the issue, on the CLI: the person reads `lantern review --json`, the agent
    then raises the record's priority, injects a reference and archives it; the person's
    accept with the tip they saw is refused, naming what arrived, and nothing changes."""
    with agent(path) as store:
        record = store.add("deploys go out on tuesdays", kind="fact", priority=10).id
    (branch,) = review_document(path)["branches"]
    seen = branch["tip"]
    assert [r["record"]["priority"] for r in branch["records"]] == [10]
    assert (
        ", priority 10, " in lantern("review", store=path).stdout
    )  # the text shows the fields too
    with agent(path) as store:
        store.update(record, priority=99, add_source_refs=["note:injected-after-review"])
        store.archive(record)
    arrived = pygit2.Repository(str(path)).walk(pygit2.Oid(hex=branch_tip(path)))
    arrived_ids = [str(c.id) for c in arrived][:2]
    before = state(path)
    for op in ("accept", "reject"):
        for expect in (seen, seen[:7]):
            refused = lantern("review", op, record, "--expect", expect, "--json", store=path)
            assert refused.returncode == 1, refused.stderr
            error = error_of(refused)
            assert error["code"] == "review_changed"
            for commit in arrived_ids:
                assert commit[:10] in error["message"]
            assert "2 commits arrived" in error["message"] and record in error["message"]
            assert refused.stdout == ""
            assert state(path) == before
    # Text too: the message on stderr, exit 1.
    plain = lantern("review", "accept", "--all", "--expect", seen, store=path)
    assert plain.returncode == 1 and plain.stderr.startswith("Error: lantern/review/mcp changed")
    assert state(path) == before
    # With the tip as it is now, the accept goes through: what it takes is what is listed now.
    now = review_document(path)["branches"][0]["tip"]
    done = lantern("review", "accept", record, "--expect", now[:12], "--json", store=path)
    assert done.returncode == 0, done.stderr
    assert listed(path)[record]["status"] == "archived"
    assert listed(path)[record]["priority"] == 99


def test_accept_all_with_the_tip_seen_never_takes_a_record_that_arrived_later(path):
    with agent(path) as store:
        first = store.add("the one record the person saw", kind="fact").id
    seen = review_document(path)["branches"][0]["tip"]
    with agent(path) as store:
        later = store.add("a record added after the person looked", kind="fact").id
    before = state(path)
    refused = lantern("review", "accept", "--all", "--expect", seen, "--json", store=path)
    assert refused.returncode == 1 and error_of(refused)["code"] == "review_changed"
    assert later in error_of(refused)["message"]
    assert state(path) == before
    assert first not in listed(path) and later not in listed(path)


def test_the_library_takes_expect_and_raises_review_changed_with_what_arrived(path):
    from lantern_git.errors import ReviewChanged

    with agent(path) as store:
        record = store.add("a fact", kind="fact").id
    seen = branch_tip(path)
    with agent(path) as store:
        store.update(record, priority=90)
    news = branch_tip(path)
    before = state(path)
    with opened(path) as store:
        with pytest.raises(ReviewChanged) as raised:
            store.review_accept([record], expect=seen)
        assert raised.value.code == "review_changed" and raised.value.exit_code == 1
        assert raised.value.tip == news and raised.value.arrived == [news]
        with pytest.raises(ReviewChanged):
            store.review_reject(None, branch="mcp", expect=seen, reason="stale")
        assert state(path) == before
        decision = store.review_accept([record], expect=news)
    assert decision.records == [record]


@pytest.mark.parametrize(
    ("expect", "code", "exit_code"),
    [
        ("abc12", "usage_error", 2),  # too short to name a commit
        ("not-a-commit", "usage_error", 2),
        ("0" * 40, "review_changed", 1),  # a well-formed tip that is no branch's
    ],
)
def test_a_bad_or_unknown_expect_is_refused_and_changes_nothing(path, expect, code, exit_code):
    with agent(path) as store:
        record = store.add("a fact", kind="fact").id
    before = state(path)
    refused = lantern("review", "accept", record, "--expect", expect, "--json", store=path)
    assert refused.returncode == exit_code, refused.stderr
    assert error_of(refused)["code"] == code
    assert state(path) == before


def test_the_mcp_review_list_carries_the_tip(path):
    from lantern_git.mcp.server import StoreTarget, ToolRunner

    with agent(path) as store:
        store.add("a fact", kind="fact")
    outcome = ToolRunner(StoreTarget(str(path))).run("lantern_review_list", {"limit": 10})
    assert not outcome.is_error, outcome.value
    answer = outcome.value
    assert [b["tip"] for b in answer["branches"]] == [branch_tip(path)]


# ---------------------------------------------------------------------------- 1. on the web


def decision_form(html: str, record_id: str | None = None) -> dict[str, str]:
    """The hidden fields of the review form for one record (None: the branch's)."""
    section = html
    if record_id is not None:
        section = html.split(f'id="pending-{record_id}"', 1)[1].split("</article>", 1)[0]
    fields: dict[str, str] = {}
    for attrs in Markup(section.split("</form>", 1)[0]).tags("input"):
        if attrs.get("type") == "hidden":
            fields[str(attrs["name"])] = str(attrs["value"])
    return fields


def test_every_review_form_carries_the_tip_it_was_rendered_with(path):
    with agent(path) as store:
        record = store.add("a fact", kind="fact").id
    with served(path) as (client, _):
        html = client.get("/review").text
        assert decision_form(html)["tip"] == branch_tip(path)
        assert decision_form(html, record)["tip"] == branch_tip(path)
        page = client.get(f"/records/{record}?pending=1").text
        assert decision_form(page.split('id="waiting-mcp"', 1)[1])["tip"] == branch_tip(path)


def test_a_stale_accept_from_the_page_is_a_409_that_shows_what_changed(path):
    with agent(path) as store:
        record = store.add("deploys go out on tuesdays", kind="fact", priority=10).id
    with served(path, author="Rita Reviewer <rita@example.com>") as (client, _):
        form = decision_form(client.get("/review").text, record)
        with agent(path) as store:
            store.update(record, priority=99, add_source_refs=["note:injected-after-review"])
            store.archive(record)
        before = state(path)
        for action in ("/review/accept", "/review/reject"):
            refused = client.post(action, data=form, follow_redirects=False)
            assert refused.status_code == 409, refused.text[:400]
            text = Markup(refused.text).text
            assert "review_changed" in text and "2 commits arrived" in text
            assert "nothing was changed" in text
            # The page shows the branch as it is now: the update the person had not seen.
            assert "10 → 99" not in text  # an added record shows its fields, not a change
            article = refused.text.split(f'id="pending-{record}"', 1)[1].split("</article>")[0]
            assert "note:injected-after-review" in Markup(article).text
            assert decision_form(refused.text, record)["tip"] == branch_tip(path)
            assert state(path) == before
        assert record not in listed(path)


def test_accept_all_from_a_stale_page_is_a_409_and_takes_nothing(path):
    with agent(path) as store:
        store.add("the record the page listed", kind="fact")
    with served(path) as (client, _):
        form = decision_form(client.get("/review").text)
        assert form["all"] == "1"
        with agent(path) as store:
            later = store.add("a record that arrived after the page was rendered", kind="fact").id
        before = state(path)
        refused = client.post("/review/accept", data=form, follow_redirects=False)
        assert refused.status_code == 409
        assert later in Markup(refused.text).text
        assert state(path) == before
        assert listed(path) == {}
        # Reloaded, the page lists both under the new tip, and Accept all takes both.
        fresh = decision_form(client.get("/review").text)
        done = client.post("/review/accept", data=fresh, follow_redirects=False)
        assert done.status_code == 303
        assert len(listed(path)) == 2


# ---------------------------------------------------------------------------- 2. supersede


def pending_supersede(path: Path) -> tuple[str, str]:
    """A record on the store's branch, and an agent's pending supersede of it."""
    with opened(path) as store:
        old = store.add("the build uses make", kind="fact").id
    with agent(path) as store:
        new = store.supersede(old, "the build uses ninja", reason="the Makefile is gone").id
    return old, new


@pytest.mark.parametrize("named", ["new", "old"])
def test_accepting_either_half_of_a_pending_supersede_accepts_both(path, named):
    old, new = pending_supersede(path)
    (branch,) = review_document(path)["branches"]
    by_id = {r["id"]: r for r in branch["records"]}
    assert by_id[new]["decided_with"] == [old] and by_id[old]["decided_with"] == [new]
    chosen = new if named == "new" else old
    done = lantern("review", "accept", chosen, "--expect", branch["tip"], "--json", store=path)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["records"]) == sorted([old, new])
    records = listed(path)
    assert records[old]["status"] == "superseded"
    assert records[new]["status"] == "active" and records[new]["supersedes_id"] == old
    assert sorted(head_trailers(path)["Lantern-Record"]) == sorted([old, new])
    assert review_document(path) == {"branches": []}


@pytest.mark.parametrize("named", ["new", "old"])
def test_rejecting_either_half_of_a_pending_supersede_rejects_both(path, named):
    old, new = pending_supersede(path)
    before = snapshot(path)
    chosen = new if named == "new" else old
    done = lantern("review", "reject", chosen, "--json", store=path)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["records"]) == sorted([old, new])
    assert snapshot(path) == before
    assert review_document(path) == {"branches": []}
    assert listed(path)[old]["status"] == "active" and new not in listed(path)


def test_a_supersede_of_a_pending_record_chains_the_unit(path):
    with agent(path) as store:
        first = store.add("version one", kind="fact").id
        second = store.supersede(first, "version two").id
        third = store.supersede(second, "version three").id
    done = lantern("review", "accept", third, "--json", store=path)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["records"]) == sorted([first, second, third])
    records = listed(path)
    assert [records[i]["status"] for i in (first, second, third)] == [
        "superseded",
        "superseded",
        "active",
    ]


def test_the_review_page_shows_a_supersede_as_one_item_with_its_diff(path):
    old, new = pending_supersede(path)
    with served(path) as (client, _):
        html = client.get("/review").text
        articles = Markup(html).tags("article")
        assert [a.get("id") for a in articles] == [f"pending-{new}"]
        article = html.split(f'id="pending-{new}"', 1)[1].split("</article>", 1)[0]
        text = Markup(article).text
        assert "Decided as one" in text and f"supersedes {old}" in text
        assert "- the build uses make" in text and "+ the build uses ninja" in text
        assert "active → superseded" in text
        form = decision_form(html, new)
        assert form["tip"] == branch_tip(path)
        # Its one Reject takes both halves.
        done = client.post("/review/reject", data=form, follow_redirects=False)
        assert done.status_code == 303
    assert review_document(path) == {"branches": []}
    assert listed(path)[old]["status"] == "active"


def test_review_text_shows_a_supersede_as_one_unit(path):
    old, new = pending_supersede(path)
    text = lantern("review", store=path).stdout
    lines = text.splitlines()
    assert lines.index(f"  added    {new[:7]}  the build uses ninja") < lines.index(
        f"  changed  {old[:7]}  the build uses make"
    )
    assert "  decided as one (2 records, accepted or rejected together):" in lines
    assert f"      supersedes {old[:7]}; content against it:" in text
    assert "        - the build uses make" in lines and "        + the build uses ninja" in lines
    assert "      reason: the Makefile is gone" in lines
    assert "      status: active -> superseded" in lines


# ---------------------------------------------------------------------------- 4. hidden text

BIDI = "the prod database: \u202eon\u202c"
# What the issue found raw on the pages and in the CLI: ESC, BEL, SOH and LRI, and NEL (C1).
CONTROLS = " colours \x1b[2J bell \x07 start \x01 isolate \u2066x\u2069 next \x85 del \x7f"
HOSTILE = BIDI + CONTROLS
SHOWN = (
    "the prod database: <U+202E>on<U+202C> colours <U+001B>[2J bell <U+0007> start <U+0001>"
    " isolate <U+2066>x<U+2069> next <U+0085> del <U+007F>"
)
# The contract's list: bidi controls, C0 but tab and newline, DEL, C1.
MUST_SHOW = [
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    *(c for c in range(0x20) if c not in (0x09, 0x0A)),
    0x7F,
    *range(0x80, 0xA0),
]


def raw_hidden(text: str) -> list[str]:
    """The characters of MUST_SHOW that reached a text unshown."""
    return sorted({f"U+{ord(c):04X}" for c in text if ord(c) in MUST_SHOW})


def test_hidden_characters_are_unicodes_cc_and_cf_but_tab_newline_and_the_joiners():
    import sys
    import unicodedata

    from lantern_git.core.hidden import hidden_in, is_hidden, reveal

    for code in MUST_SHOW:
        assert is_hidden(chr(code)), hex(code)
        assert reveal(f"a{chr(code)}b") == f"a<U+{code:04X}>b"
    for kept in ("\t", "\n", "\u200c", "\u200d", "é", "日本", "👨\u200d👩\u200d👧", " "):
        assert reveal(kept) == kept and hidden_in(kept) == []
    every = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in ("Cc", "Cf")]
    shown = [c for c in every if is_hidden(chr(c))]
    assert set(every) - set(shown) == {0x09, 0x0A, 0x200C, 0x200D}
    text = "".join(chr(c) for c in shown)
    assert reveal(text) == "".join(f"<U+{c:04X}>" for c in shown)
    assert reveal("\U000e0041\ufeff\u00ad") == "<U+E0041><U+FEFF><U+00AD>"
    assert hidden_in({"content": BIDI, "refs": ["a\x1b"]}) == ["U+001B", "U+202C", "U+202E"]


def test_cli_text_shows_and_flags_hidden_characters_and_json_keeps_them(path):
    with opened(path) as store:
        record = store.add(HOSTILE, kind="fact").id
        store.update(record, priority=70, reason="raised \u202e")
    for args in (
        ("memory", "show", record),
        ("memory", "list"),
        ("memory", "list", "--wide"),
        ("memory", "search", "database"),
        ("memory", "history", record),
        ("diff", "HEAD~2", "HEAD"),
        ("log",),
    ):
        shown = lantern(*args, store=path)
        assert shown.returncode == 0, (args, shown.stderr)
        assert raw_hidden(shown.stdout) == [], args
        assert "<U+202E>" in shown.stdout, args
        assert "hidden" in shown.stdout, args  # the record or change is flagged
    show = lantern("memory", "show", record, store=path).stdout
    assert SHOWN in show.splitlines()
    assert "hidden:" in show and "U+202E" in show.split("hidden:", 1)[1]
    listed_text = lantern("memory", "list", "--wide", store=path).stdout
    assert "[hidden] " + SHOWN in listed_text
    # JSON carries the stored string unchanged.
    for args in (("memory", "show", record, "--json"), ("memory", "list", "--json")):
        document = json.loads(lantern(*args, store=path).stdout)
        first = document[0] if isinstance(document, list) else document
        assert first["content"] == HOSTILE
    history = json.loads(lantern("memory", "history", record, "--json", store=path).stdout)
    assert history["history"][0]["reason"] == "raised \u202e"


def test_review_text_and_every_page_show_and_flag_a_pending_bidi_record(path):
    with agent(path) as store:
        record = store.add(HOSTILE, kind="fact").id
    text = lantern("review", store=path)
    assert raw_hidden(text.stdout) == []
    assert SHOWN in text.stdout and "[hidden characters: " in text.stdout
    (branch,) = review_document(path)["branches"]
    assert branch["records"][0]["record"]["content"] == HOSTILE
    with served(path) as (client, _):
        pages = ("/review", "/?pending=1", f"/records/{record}?pending=1", "/changes?from=HEAD~1")
        for url in pages:
            if url.startswith("/changes"):  # the diff of the accept commit
                with opened(path) as store:
                    store.review_accept([record], branch="mcp")
            html = client.get(url).text
            assert raw_hidden(html) == [], url
            assert "&lt;U+202E&gt;on&lt;U+202C&gt;" in html, url
            flags = [a for a in Markup(html).tags("strong") if a.get("class") == "hidden-flag"]
            assert flags, url
        review_html = client.get("/review").text
        assert "Nothing awaits review." in review_html


def test_times_read_as_local_iso_dates_on_history_review_and_the_pages(path, monkeypatch):
    """``updated_at: 1767225600 -> 1769904000`` reads as dates, in the local zone (the test
    sets it), on ``memory history``, ``lantern review``, the record and review pages."""
    import os
    import shutil
    import time

    faketime = shutil.which("faketime")
    assert faketime, "faketime is missing: .ci/system-deps installs it"
    utc = {**os.environ, "TZ": "UTC"}
    kolkata = {**os.environ, "TZ": "Asia/Kolkata"}

    def at(moment: str, *args: str) -> str:
        done = subprocess.run(
            [
                faketime,
                "-f",
                moment,
                sys.executable,
                "-m",
                "lantern_git",
                "--store",
                str(path),
                *args,
            ],
            env=utc,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    record = json.loads(
        at("2026-01-01 00:00:00", "memory", "add", "a fact", "--kind", "fact", "--json")
    )["id"]
    at("2026-02-01 00:00:00", "memory", "update", record, "--priority", "60")
    with agent(path) as store:
        store.update(record, priority=90, expires_at=2_000_000_000)
    history = json.loads(lantern("memory", "history", record, "--json", store=path).stdout)
    assert {"field": "updated_at", "old": 1767225600, "new": 1769904000} in history["history"][0][
        "changes"
    ]  # JSON keeps unix seconds
    text = lantern("memory", "history", record, env=kolkata, store=path).stdout
    lines = text.splitlines()
    assert "    updated_at: 2026-01-01T05:30:00+05:30 -> 2026-02-01T05:30:00+05:30" in lines
    assert "commit " + history["history"][0]["commit"][:10] + "  2026-02-01T05:30:00+05:30  " in (
        text
    )
    assert "1767225600" not in text and "1769904000" not in text
    review = lantern("review", env=kolkata, store=path).stdout.splitlines()
    assert "      expires_at: (none) -> 2033-05-18T09:03:20+05:30" in review
    assert not [line for line in review if "2000000000" in line]
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        with served(path) as (client, _):
            page = Markup(client.get("/review").text).text
            assert "2033-05-18T09:03:20+05:30" in page and "2000000000" not in page
            shown = Markup(client.get(f"/records/{record}").text).text
            assert "2026-01-01T05:30:00+05:30 → 2026-02-01T05:30:00+05:30" in shown
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


# ---------------------------------------------------------------------------- 3. everything

TRANSCRIPT = (
    b"User: let's set up the repo\n"
    b"User: I always want separate branches for each feature\n"
    b"Assistant: noted, one branch per feature\n"
    b"User: and squash merges please\n"
)


def cited_pending(path: Path) -> tuple[str, str]:
    """A transcript on the store's branch, and an agent's pending record citing lines 2-3 of
    it, written with a reason."""
    from lantern_git.evidence.sources import SourceInput

    with opened(path) as store:
        added = store.sources.add([SourceInput(TRANSCRIPT, "chat.txt", uri="session:chat")])
        source = added[0].manifest.id
    with agent(path) as store:
        record = store.add(
            "Prefers a separate branch per feature",
            kind="preference",
            source_refs=[f"source:{source}#L2-L3"],
            reason="the user said so twice",
        ).id
    return source, record


def test_review_text_shows_the_writers_reason_the_content_and_the_cited_lines_verified(path):
    source, record = cited_pending(path)
    lines = lantern("review", store=path).stdout.splitlines()
    assert f"  added    {record[:7]}  Prefers a separate branch per feature" in lines
    assert "      reason: the user said so twice" in lines
    assert "        Prefers a separate branch per feature" in lines  # the whole content
    (evidence,) = [line for line in lines if line.startswith("      evidence ")]
    assert evidence.startswith(f"      evidence source:{source}@") and evidence.endswith(": ok")
    assert "            2  User: I always want separate branches for each feature" in lines
    assert "            3  Assistant: noted, one branch per feature" in lines
    # A record written without a reason says so.
    with agent(path) as store:
        store.add("no reason for this one", kind="fact")
    assert "      reason: (none given)" in lantern("review", store=path).stdout.splitlines()


def test_the_review_page_shows_the_reason_and_the_cited_lines_with_their_status(path):
    source, record = cited_pending(path)
    with served(path) as (client, _):
        html = client.get("/review").text
        article = html.split(f'id="pending-{record}"', 1)[1].split("</article>", 1)[0]
        text = Markup(article).text
        assert "Writer's reason: the user said so twice" in text
        badges = [a for a in Markup(article).tags("span") if a.get("class") == "badge ok"]
        assert len(badges) == 1
        cited = article.split('<pre class="cited">', 1)[1].split("</pre>", 1)[0]
        assert Markup(cited).text.splitlines() == [
            "2User: I always want separate branches for each feature",
            "3Assistant: noted, one branch per feature",
        ]
        assert f"/sources/{source}" in article


def test_a_pending_record_is_accepted_from_its_own_page_beside_its_evidence(path):
    _, record = cited_pending(path)
    with served(path, author="Rita Reviewer <rita@example.com>") as (client, _):
        page = client.get(f"/records/{record}?pending=1").text
        waiting = page.split('id="waiting-mcp"', 1)[1]
        form = decision_form(waiting) | {"reason": "read the transcript"}
        assert form["id"] == record and form["branch"] == "mcp"
        assert 'id="evidence"' in page and "badge ok" in page
        done = client.post("/review/accept", data=form, follow_redirects=False)
        assert done.status_code == 303, done.text[:300]
    assert record in listed(path)
    trailers = head_trailers(path)
    assert trailers["Lantern-Op"] == ["accept"]
    assert trailers["Lantern-Reason"] == ["read the transcript"]
    # An accepted record's page has nothing to decide.
    with served(path) as (client, _):
        assert 'id="waiting-' not in client.get(f"/records/{record}").text


# ---------------------------------------------------------------------------- issue 37


def test_a_hostile_pending_source_title_on_the_review_page_is_escaped(path):
    from lantern_git.evidence.sources import SourceInput

    hostile = "<img src=x onerror=alert(1)>"
    with agent(path) as store:
        added = store.sources.add(
            [SourceInput(b"a body\n", "x.txt", uri="session:x", title=hostile)]
        )
        source = added[0].manifest.id
    with served(path) as (client, _):
        html = client.get("/review").text
        article = html.split(f'id="pending-source-{source}"', 1)[1].split("</article>", 1)[0]
        assert Markup(article).dangers() == []
        assert "&lt;img src=x onerror=alert(1)&gt;" in article
        assert hostile in Markup(article).text


def test_rejecting_a_pending_source_rejects_the_pending_records_that_cite_it(path):
    """A record depends on the source it cites: rejected alone, the source would leave the
    record citing a source the store never gets once the record is accepted."""
    from lantern_git.evidence.sources import SourceInput

    with agent(path) as store:
        [added] = store.sources.add([SourceInput(TRANSCRIPT, "chat.txt", uri="session:chat")])
        source = added.manifest.id
        citing = store.add(
            "Prefers a branch per feature", kind="preference", source_refs=[f"source:{source}#L2"]
        ).id
        other = store.add("unrelated", kind="fact").id
    text = lantern("review", store=path).stdout
    assert f"      cited by pending {citing[:7]} (a reject of the source rejects them too)" in (
        text.splitlines()
    )
    with served(path) as (client, _):
        html = client.get("/review").text
        article = html.split(f'id="pending-source-{source}"', 1)[1].split("</article>", 1)[0]
        assert f"Cited by pending {citing}" in Markup(article).text
    done = lantern("review", "reject", source[:8], "--json", store=path)
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert decision["sources"] == [source] and decision["records"] == [citing]
    (branch,) = review_document(path)["branches"]
    assert [r["id"] for r in branch["records"]] == [other] and branch["sources"] == []


def test_source_list_and_show_text_show_and_flag_a_hidden_title(path):
    from lantern_git.evidence.sources import SourceInput

    with opened(path) as store:
        [added] = store.sources.add(
            [SourceInput(b"body\n", "t.txt", uri="session:t", title="notes \u202eedoc")]
        )
    listed_text = lantern("source", "list", store=path).stdout
    shown = lantern("source", "show", added.manifest.id, store=path).stdout
    for text in (listed_text, shown):
        assert raw_hidden(text) == [] and "notes <U+202E>edoc" in text
    assert "[hidden] notes <U+202E>edoc" in listed_text
    assert "hidden:      U+202E: characters shown as <U+XXXX>" in shown.splitlines()
    document = json.loads(lantern("source", "show", added.manifest.id, "--json", store=path).stdout)
    assert document["title"] == "notes \u202eedoc"


AGENT_LOOP = """
import sys, time
from lantern_git.store import Store

store = Store(sys.argv[1], actor="mcp", review=True)
end = time.monotonic() + float(sys.argv[2])
ids, i = [], 0
while time.monotonic() < end:
    ids.append(store.add(f"agent fact {i}", kind="fact", priority=10).id)
    for record_id in ids[-3:]:
        try:
            store.update(record_id, priority=11 + (i * 7) % 89)
        except Exception:
            pass  # accepted meanwhile and no longer on the branch as it was: the next one
    i += 1
    time.sleep(0.05)  # an agent thinks between writes; a tight loop would starve the reviewer
store.close()
"""


def test_accepts_racing_an_agent_take_only_what_each_page_showed(path):
    """An agent (another process) adds records and keeps changing their priority while a
    person loads the review page and accepts its first added record, again and again: every
    accept that goes through put on the store's branch the priority the page showed, every
    other answer is a 409, and nothing is lost."""
    import re
    import time

    outcomes: dict[int, int] = {}
    with served(path) as (client, _):
        agent_process = subprocess.Popen(
            [sys.executable, "-c", AGENT_LOOP, str(path), "8"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                running = agent_process.poll() is None
                html = client.get("/review").text
                added = re.search(
                    r'<article class="pending-record" id="pending-([0-9a-f]{16})">\s*'
                    r'<div class="part">\s*<h3>added ',
                    html,
                )
                if added is None:
                    if not running:
                        break
                    time.sleep(0.05)
                    continue
                record = added.group(1)
                article = html.split(f'id="pending-{record}"', 1)[1].split("</article>", 1)[0]
                shown = int(re.search(r"<th>priority</th><td>(\d+)</td>", article).group(1))
                answer = client.post(
                    "/review/accept", data=decision_form(html, record), follow_redirects=False
                )
                outcomes[answer.status_code] = outcomes.get(answer.status_code, 0) + 1
                assert answer.status_code in (303, 409), answer.text[:500]
                if answer.status_code == 303:
                    assert listed(path)[record]["priority"] == shown
                if not running and answer.status_code == 303:
                    break  # the agent stopped: one accept after it is enough
        finally:
            agent_process.wait(timeout=60)
    assert agent_process.returncode == 0, agent_process.stderr
    assert outcomes.get(303, 0) >= 1, outcomes
    # Nothing lost: every record the agent added is on the store's branch or still pending.
    repo = pygit2.Repository(str(path))
    pending = {r["id"] for b in review_document(path)["branches"] for r in b["records"]}
    stored = set(listed(path))
    walker = repo.walk(repo.references[MCP_BRANCH].target)
    added_ids = {
        i
        for c in walker
        if parse_trailers(c.message).get("Lantern-Op") == ["add"]
        for i in parse_trailers(c.message).get("Lantern-Record", [])
    }
    assert added_ids and added_ids <= stored | pending
