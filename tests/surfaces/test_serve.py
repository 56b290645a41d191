"""``lantern serve`` in-process (Starlette's test client over a real store in a real git
repository): every page, every security rule, review decisions as the CLI makes them."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pygit2
import pytest
from support.cli import lantern
from support.serve import BASE, MCP_BRANCH, PORT, Markup, forms, opened, served
from support.stores import git, make_store, snapshot

from lantern_git.evidence.sources import SourceInput
from lantern_git.git.repo import parse_trailers
from lantern_git.store import Store
from lantern_git.web.app import ServeConfig, create_app

CLI_BRANCH = "refs/heads/lantern/review/cli"


@pytest.fixture
def path(tmp_path) -> Path:
    return make_store(tmp_path / "store")


def add(path: Path, content: str, kind: str = "fact", **options) -> str:
    with opened(path) as store:
        return store.add(content, kind=kind, **options).id


def agent_writes(path: Path, *contents: str, actor: str = "mcp") -> list[str]:
    """Pending writes, as ``lantern mcp --review`` makes them (the same library call)."""
    with opened(path, actor=actor, review=True) as store:
        return [store.add(c, kind="fact").id for c in contents]


def ingest(path: Path, body: bytes, name: str = "notes.md", **more) -> str:
    with opened(path) as store:
        results = store.sources.add([SourceInput(body, name, uri=f"session:{name}", **more)])
        return results[0].manifest.id


def tip(path: Path, ref: str) -> str | None:
    repo = pygit2.Repository(str(path))
    found = repo.references.get(ref)
    return str(found.target) if found is not None else None


def state(path: Path) -> dict:
    """Everything a refused request must leave as it was: the store's branch, files and git
    status, and every review branch's tip."""
    repo = pygit2.Repository(str(path))
    refs = {r: str(repo.references[r].target) for r in repo.references if "review" in r}
    return {**snapshot(path), "refs": refs}


def rows(html: str, table: str) -> list[str]:
    """The record ids a page's table lists, in order."""
    body = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'href="/records/([0-9a-f]{16})', body)


def field_table(html: str, table: str = "fields") -> dict[str, str]:
    """A two-column table's rows as name -> text."""
    body = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<th>(.*?)</th><td>(.*?)</td>", body, re.S)
    return {Markup(k).text: Markup(v).text.strip() for k, v in cells}


def head_commit(path: Path) -> pygit2.Commit:
    repo = pygit2.Repository(str(path))
    return repo[repo.head.target].peel(pygit2.Commit)


# ---------------------------------------------------------------------------- security


def test_the_token_is_taken_once_from_the_url_then_kept_in_a_strict_httponly_cookie(path):
    add(path, "a record only the token holder reads")
    with served(path, login=False) as (client, config):
        first = client.get(f"/?token={config.token}&status=all", follow_redirects=False)
        assert first.status_code == 303
        # The token leaves the address bar; the other parameters stay.
        assert first.headers["location"] == "/?status=all"
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"lantern_token_{PORT}={config.token};")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        page = client.get("/")
        assert page.status_code == 200
        assert "a record only the token holder reads" in page.text


def test_the_token_redirect_never_leaves_the_server(path):
    with served(path, login=False) as (client, config):
        for target in ("//evil.example/x", "///evil.example", "/%2F%2Fevil.example"):
            response = client.get(f"{target}?token={config.token}", follow_redirects=False)
            assert response.status_code == 303
            location = response.headers["location"]
            assert location.startswith("/") and not location.startswith("//"), location


def every_route(app) -> list[tuple[str, str]]:
    found = []
    for route in app.routes:
        methods = getattr(route, "methods", None) or {"GET"}
        target = route.path.replace("{record_id}", "0123456789abcdef").replace(
            "{source_id}", "0123456789abcdef"
        )
        if target == "/static":
            target = "/static/style.css"
        for method in sorted(methods - {"HEAD"}):
            found.append((method, target))
    return found


@pytest.mark.parametrize("cookie", [None, "wrong", ""])
def test_every_route_without_the_token_gets_401_and_no_store_data(path, cookie):
    secret = "the secret the page must not show"
    record_id = add(path, secret)
    with opened(path) as store:
        config = ServeConfig(port=PORT)
        app = create_app(store, config)
        from starlette.testclient import TestClient

        client = TestClient(app, base_url=BASE)
        if cookie is not None:
            client.cookies.set(f"lantern_token_{PORT}", cookie)
        routes = every_route(app)
        assert {p for _, p in routes} >= {"/", "/review", "/review/accept", "/static/style.css"}
        for method, target in [*routes, ("GET", f"/records/{record_id}")]:
            response = client.request(method, target)
            assert response.status_code == 401, (method, target)
            assert secret not in response.text and record_id not in response.text
        # The cookie of another server (another port) is not this one's.
        client.cookies.set(f"lantern_token_{PORT + 1}", config.token)
        assert client.get("/").status_code == 401


def test_a_wrong_token_in_the_url_is_refused_and_sets_no_cookie(path):
    add(path, "private")
    with served(path, login=False) as (client, config):
        for wrong in ("x", config.token[:-1], config.token + "x", ""):
            response = client.get(f"/?token={wrong}", follow_redirects=False)
            assert response.status_code == 403
            assert "set-cookie" not in response.headers and "private" not in response.text
        assert client.get("/").status_code == 401


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        f"evil.example:{PORT}",
        f"127.0.0.1:{PORT + 1}",
        "127.0.0.1",
        f"127.0.0.1.evil.example:{PORT}",
        "",
        # An address with the right port is the bound address only on a 0.0.0.0 bind: on a
        # loopback bind, another interface's address (or the IPv6 loopback) is not the one
        # printed.
        f"192.168.1.20:{PORT}",
        f"10.0.0.1:{PORT}",
        f"[::1]:{PORT}",
        f"[fe80::1]:{PORT}",
    ],
)
def test_a_host_header_other_than_the_bound_address_is_refused(path, host):
    add(path, "private")
    with served(path) as (client, config):
        response = client.get("/", headers={"host": host})
        assert response.status_code == 400
        assert "private" not in response.text
        # Even with the token: a DNS-rebinding page cannot log in.
        refused = client.get(f"/?token={config.token}", headers={"host": host})
        assert refused.status_code == 400 and "set-cookie" not in refused.headers


def test_bound_to_every_address_any_ip_address_with_the_port_is_the_bound_address(path):
    with opened(path) as store:
        config = ServeConfig(host="0.0.0.0", port=PORT)
        from starlette.testclient import TestClient

        client = TestClient(create_app(store, config), base_url=f"http://0.0.0.0:{PORT}")
        assert client.get(f"/?token={config.token}").status_code == 200
        for host in (f"192.168.1.20:{PORT}", f"[fe80::1]:{PORT}", f"localhost:{PORT}"):
            assert client.get("/", headers={"host": host}).status_code == 200, host
        # A name is what DNS rebinding sends: refused; so is another port.
        for host in (f"evil.example:{PORT}", f"192.168.1.20:{PORT + 1}", "192.168.1.20"):
            assert client.get("/", headers={"host": host}).status_code == 400, host


def test_localhost_is_the_bound_loopback_address_too(path):
    add(path, "mine")
    with served(path) as (client, _):
        assert client.get("/", headers={"host": f"localhost:{PORT}"}).status_code == 200
        assert client.get("/", headers={"host": f"LOCALHOST:{PORT}"}).status_code == 200


def test_every_response_forbids_scripts_sniffing_referrers_and_frames(path):
    with served(path, login=False) as (client, config):
        responses = [client.get("/"), client.get("/", headers={"host": "evil"})]
        client.get(f"/?token={config.token}")
        responses += [client.get(p) for p in ("/", "/review", "/status", "/static/style.css")]
        responses.append(client.get("/records/ffff"))
        for response in responses:
            policy = response.headers["content-security-policy"]
            assert "default-src 'none'" in policy and "script-src" not in policy
            assert "form-action 'self'" in policy
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["referrer-policy"] == "no-referrer"
            assert response.headers["x-frame-options"] == "DENY"


def test_pages_have_no_script_and_the_stylesheet_is_served_from_the_package(path):
    add(path, "x")
    with served(path) as (client, _):
        for target in ("/", "/sources", "/review", "/changes", "/status"):
            page = Markup(client.get(target).text)
            assert page.tags("script") == []
            assert [link["href"] for link in page.tags("link")] == ["/static/style.css"]
        css = client.get("/static/style.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


@pytest.mark.parametrize(
    "target",
    [
        "/static/../pyproject.toml",
        "/static/%2e%2e/%2e%2e/pyproject.toml",
        "/static/..%2f..%2f..%2fpyproject.toml",
        "/static/%2e%2e/app.py",
        "/static/../templates/base.html",
        "/records/..%2f..%2fpyproject.toml",
        "/records/..%2F..%2Flantern.yaml",
        "/records/....",
        "/sources/..%2f..%2fetc%2fpasswd",
        "/sources/%2e%2e",
        "/sources/0123456789abcdef?version=../../../etc/passwd",
        "/?at=../../etc/passwd",
        "/changes?from=../../etc/passwd",
        "//etc/passwd",
    ],
)
def test_no_path_reaches_a_file_outside_the_store_operations(path, target):
    (path / "secret.txt").write_text("SECRET-FILE-CONTENT\n")
    with served(path) as (client, _):
        response = client.get(target)
        assert response.status_code in (400, 404), (target, response.status_code)
        for leaked in ("SECRET-FILE-CONTENT", "[build-system]", "root:x:0", "format: 1", "{%"):
            assert leaked not in response.text


# ---------------------------------------------------------------------------- hostile content

HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "'><svg onload=alert(3)>",
    "[x](javascript:alert(4))",
    "<a href=javascript:alert(5)>click</a>",
    "{{ 7*7 }}{% raw %}",
]


def hostile_store(path: Path) -> dict[str, str]:
    """A store where every field a person or an agent can write holds hostile text: record
    content, scope, opaque source refs, a hand-added field, the reason and the author of a
    commit, a source's body, title, uri and meta, and a pending record."""
    body = ("safe first line\n" + "\n".join(HOSTILE) + "\n").encode()
    author = 'Eve" onmouseover="alert(8)\' &amp; x <eve@example.com>'
    with opened(path, author=author) as store:
        source = store.sources.add(
            [
                SourceInput(
                    body,
                    "evil.md",
                    uri="javascript:alert(6)",
                    title=HOSTILE[0] + HOSTILE[1],
                    meta={"note": HOSTILE[1], "link": HOSTILE[3]},
                )
            ],
            reason=HOSTILE[1],
        )[0].manifest.id
        record = store.add(
            "\n".join(HOSTILE),
            kind="fact",
            scope='user:"><img/src=x/onerror=alert(7)>',
            source_refs=[f"source:{source}#L2-L6", "javascript:alert(10)", HOSTILE[1]],
            reason=HOSTILE[0],
        )
        changed = store.update(record.id, priority=90, reason=HOSTILE[3])
    # A field added by hand (kept on every rewrite), committed as lantern commit does.
    file = next((path / "memory").rglob(f"{changed.id}.md"))
    text = file.read_text()
    file.write_text(
        text.replace("---\n", f"---\nnote: '{HOSTILE[1]}'\n", 1).replace("\nnote:", "\nnote:", 1)
    )
    with opened(path) as store:
        store.commit_hand_edits(reason=HOSTILE[2])
    pending = agent_writes(path, "pending " + HOSTILE[0] + HOSTILE[1] + HOSTILE[3])[0]
    return {"record": changed.id, "source": source, "pending": pending}


def test_hostile_text_in_every_field_and_source_body_never_becomes_markup(path):
    ids = hostile_store(path)
    with served(path) as (client, _):
        pages = {
            target: client.get(target)
            for target in (
                "/",
                "/?status=all&include_expired=1",
                "/?q=alert&mode=keyword",
                "/?pending=1",
                f"/records/{ids['record']}",
                f"/records/{ids['pending']}?pending=1",
                "/sources",
                f"/sources/{ids['source']}",
                "/review",
                "/changes?from=HEAD~4",
                "/status",
            )
        }
        for target, response in pages.items():
            assert response.status_code == 200, (target, response.text[:300])
            page = Markup(response.text)
            assert page.dangers() == [], target
        # Shown, as text: the reader sees exactly what was stored.
        record = Markup(pages[f"/records/{ids['record']}"].text).text
        for text in HOSTILE:
            assert text in record
        assert 'user:"><img/src=x/onerror=alert(7)>' in record
        assert "javascript:alert(10)" in record  # an opaque reference, never a link
        assert 'Eve" onmouseover="alert(8)\' &amp; x' in record  # the commit's author
        assert HOSTILE[0] in record and HOSTILE[3] in record  # the reasons
        assert "note" in record and HOSTILE[1] in record  # the hand-added field
        source = Markup(pages[f"/sources/{ids['source']}"].text).text
        for text in HOSTILE:
            assert text in source
        assert "javascript:alert(6)" in source
        review = Markup(pages["/review"].text).text
        assert "pending " + HOSTILE[0] + HOSTILE[1] + HOSTILE[3] in review
        # No link anywhere leaves the server.
        for response in pages.values():
            for anchor in Markup(response.text).tags("a"):
                assert (anchor["href"] or "").startswith(("/", "#", "?")), anchor


def test_an_error_message_quoting_hostile_input_is_escaped(path):
    with served(path) as (client, _):
        for target in (
            "/?scope=%3Cscript%3Ealert(1)%3C/script%3E",
            "/?min_priority=%22%3E%3Cimg%20src=x%20onerror=alert(1)%3E",
            "/?at=%3Cscript%3Ex%3C/script%3E",
            "/changes?from=%3Cscript%3Ex",
        ):
            response = client.get(target)
            assert response.status_code == 400, target
            assert Markup(response.text).dangers() == []
            assert "<script>" in Markup(response.text).text or "<img" in Markup(response.text).text


# ---------------------------------------------------------------------------- records


def test_the_records_page_lists_in_the_documented_order_with_filters_counts_and_paging(path):
    with opened(path) as store:
        low = store.add("low priority note", kind="fact", priority=10).id
        high = store.add("high priority goal", kind="goal", priority=90, scope="user:ana").id
        urgent = store.add("urgent same priority", kind="fact", priority=90, urgency=50).id
        old = store.add("archived later", kind="fact", priority=95).id
        store.archive(old)
        gone = store.add("expired note", kind="fact", expires_at=int(time.time()) - 60).id
    with served(path) as (client, _):
        # Active first; priority desc; urgency desc (written by hand from the rule).
        page = client.get("/")
        assert rows(page.text, "records") == [urgent, high, low]
        assert "3 records" in Markup(page.text).text
        assert rows(client.get("/?status=all").text, "records") == [urgent, high, low, old]
        assert rows(client.get("/?status=archived").text, "records") == [old]
        assert rows(client.get("/?kind=goal").text, "records") == [high]
        assert rows(client.get("/?kind=goal&kind=fact").text, "records") == [urgent, high, low]
        assert rows(client.get("/?scope=user:*").text, "records") == [high]
        assert rows(client.get("/?min_priority=50").text, "records") == [urgent, high]
        assert rows(client.get("/?min_urgency=1").text, "records") == [urgent]
        assert gone in rows(client.get("/?include_expired=1").text, "records")
        # Paging: a page of two, a link to the next, and the last one.
        first = client.get("/?limit=2")
        assert rows(first.text, "records") == [urgent, high]
        assert "3 records; showing 1–2" in Markup(first.text).text
        following = [a["href"] for a in Markup(first.text).tags("a") if "offset=2" in a["href"]]
        assert following, first.text
        second = client.get(following[0])
        assert rows(second.text, "records") == [low]
        assert not [a for a in Markup(second.text).tags("a") if "offset=4" in (a["href"] or "")]


def bm25_one_word(tf: int, length: int, df: int, docs: int, avg: float) -> float:
    """The documented BM25 of one word (docs/search.md): Lucene's idf, K1 1.2, B 0.75."""
    idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))


def scores(html: str, table: str) -> dict[str, str]:
    """Each row's record id and the score it shows (its last numeric cell)."""
    body = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    found = {}
    for row in re.findall(r"<tr\b.*?</tr>", body, re.S):
        record = re.search(r'href="/records/([0-9a-f]{16})', row)
        if record:
            found[record[1]] = re.findall(r'<td class="num">([^<]*)</td>', row)[-1]
    return found


def test_search_ranks_by_relevance_with_scores_and_the_list_mode_filters_in_order(path):
    with opened(path) as store:
        once = store.add("tabs mentioned once among other words here", kind="fact").id
        twice = store.add("tabs tabs tabs", kind="fact", priority=10).id
        store.add("nothing relevant", kind="fact")
    with served(path) as (client, _):
        found = client.get("/?q=tabs&mode=keyword")
        assert found.status_code == 200
        assert rows(found.text, "records") == [twice, once]
        # Each row shows its BM25 score (docs/search.md) to three places: "tabs" asks for its
        # stem "tab" and, at a tenth of its weight, the form as written; both are in 2 of the
        # 3 records, whose average length is 4 words.
        expected = {
            twice: 1.1 * bm25_one_word(3, 3, 2, 3, 4.0),
            once: 1.1 * bm25_one_word(1, 7, 2, 3, 4.0),
        }
        assert scores(found.text, "records") == {i: f"{s:.3f}" for i, s in expected.items()}
        assert expected[twice] > expected[once]
        listed = client.get("/?q=tabs&mode=list")
        assert rows(listed.text, "records") == [once, twice]  # the list order: priority first
        # Without the semantic extra: the library's refusal, as a 400 (test_serve_hardening).
        refused = client.get("/?q=tabs&mode=semantic")
        assert refused.status_code == 400 and "semantic_unavailable" in refused.text


def test_the_records_page_at_a_revision_shows_the_list_as_it_was(path):
    first = add(path, "first record")
    revision = git(path, "rev-parse", "HEAD").strip()
    second = add(path, "second record")
    with served(path) as (client, _):
        assert set(rows(client.get("/").text, "records")) == {first, second}
        assert rows(client.get(f"/?at={revision}").text, "records") == [first]


def test_bad_filters_show_the_librarys_message_with_its_status(path):
    with served(path) as (client, _):
        cases = {
            "/?status=nope": (400, "status: must be active, archived, superseded or all"),
            "/?kind=thing": (400, "kind: must be one of"),
            "/?min_priority=500": (400, "min_priority"),
            "/?min_priority=abc": (400, "min_priority: expected a whole number"),
            "/?limit=-1": (400, "limit: must be 0 or more"),
            "/records/zz": (400, "invalid_id"),
            "/records/ffff": (404, "no record with id prefix ffff"),
            "/sources/ffff": (404, "no source with id prefix ffff"),
        }
        for target, (status, message) in cases.items():
            response = client.get(target)
            assert response.status_code == status, (target, response.text[:200])
            assert message in Markup(response.text).text, target


# ---------------------------------------------------------------------------- a record


def test_a_record_page_shows_every_field_its_history_and_what_it_supersedes(path):
    with opened(path, author="Ana <ana@example.com>") as store:
        old = store.add("uses spaces", kind="preference", scope="user:ana").id
        store.update(old, priority=70, reason="matters more")
        new = store.supersede(old, "uses tabs", reason="changed her mind").id
    with served(path) as (client, _):
        page = Markup(client.get(f"/records/{new}").text)
        text = page.text
        for field in ("kind", "scope", "status", "priority", "urgency", "confidence"):
            assert field in text
        assert "uses tabs" in text and "user:ana" in text
        assert f"/records/{old}" in [a["href"] for a in page.tags("a")]  # supersedes
        before = Markup(client.get(f"/records/{old}").text)
        assert f"/records/{new}" in [a["href"] for a in before.tags("a")]  # superseded by
        history = client.get(f"/records/{old}").text.split('id="history"', 1)[1]
        history_text = Markup(history).text
        assert "supersede" in history_text and "update" in history_text
        assert "Ana <ana@example.com>" in history_text
        assert "changed her mind" in history_text and "matters more" in history_text
        assert "cli" in history_text
        assert "priority" in history_text and "50 → 70" in history_text
        assert "active → superseded" in history_text
        commits = [c for c in git(path, "log", "--format=%H").split()]
        assert commits[0][:12] in history_text


def test_a_record_page_shows_each_cited_line_verbatim_with_its_verify_status(path):
    body = b"one\ntwo: the fact\nthree\nfour\n"
    source = ingest(path, body)
    with opened(path) as store:
        kept = store.add("cites two", kind="fact", source_refs=[f"source:{source}#L2"]).id
        moved = store.add("cites three", kind="fact", source_refs=[f"source:{source}#L3"]).id
        other = store.add("opaque", kind="fact", source_refs=["session:2026-12-03"]).id
        # A new version: a line inserted before line 3, so "three" moves to line 4.
        store.sources.add(
            [
                SourceInput(
                    b"one\ntwo: the fact\ninserted\nthree\nfour\n",
                    "notes.md",
                    uri="session:notes.md",
                )
            ]
        )
    with served(path) as (client, _):
        page = client.get(f"/records/{kept}")
        evidence = page.text.split('id="evidence"', 1)[1].split("</section>", 1)[0]
        assert "two: the fact" in Markup(evidence).text
        assert "ok" in Markup(evidence).text
        assert f"/sources/{source}?version=" in evidence
        drift = client.get(f"/records/{moved}").text.split('id="evidence"', 1)[1]
        drift_text = Markup(drift.split("</section>", 1)[0]).text
        assert "drifted" in drift_text and "three" in drift_text
        assert "now at lines 4–4" in drift_text
        opaque = Markup(client.get(f"/records/{other}").text)
        assert "session:2026-12-03" in opaque.text
        assert not [a for a in opaque.tags("a") if "session" in (a["href"] or "")]
        with opened(path) as store:
            store.sources.remove(source)
        removed = Markup(client.get(f"/records/{kept}").text).text
        assert "removed" in removed and "two: the fact" in removed


def test_a_pending_record_and_a_record_at_a_revision_are_shown_as_asked(path):
    record = add(path, "as it was")
    revision = git(path, "rev-parse", "HEAD").strip()
    with opened(path) as store:
        store.update(record, priority=80)
    [pending] = agent_writes(path, "an agent's note")
    with served(path) as (client, _):
        assert field_table(client.get(f"/records/{record}").text)["priority"] == "80"
        then = client.get(f"/records/{record}?at={revision}").text
        assert "As at" in then and field_table(then)["priority"] == "50"
        assert client.get(f"/records/{pending}").status_code == 404
        shown = client.get(f"/records/{pending}?pending=1")
        assert shown.status_code == 200 and "pending" in Markup(shown.text).text


# ---------------------------------------------------------------------------- sources


def test_the_sources_pages_list_and_show_the_body_numbered_with_cited_lines_marked(path):
    source = ingest(path, b"alpha\nbeta\ngamma\ndelta\n", title="Notes")
    with opened(path) as store:
        record = store.add("beta and gamma", kind="fact", source_refs=[f"source:{source}#L2-L3"]).id
        store.sources.append(source, "epsilon")
        versions = store.sources.versions(source)
    with served(path) as (client, _):
        listing = client.get("/sources")
        assert f"/sources/{source}" in [a["href"] for a in Markup(listing.text).tags("a")]
        page = client.get(f"/sources/{source[:6]}")
        assert page.status_code == 200
        html = page.text
        marked = re.findall(r'<tr id="L(\d+)" class="cited">', html)
        assert marked == ["2", "3"]
        for number, line in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"], 1):
            assert re.search(rf'id="L{number}".*?<pre>{line}</pre>', html, re.S)
        citations = html.split('id="citations"', 1)[1].split("</ul>", 1)[0]
        assert f"/records/{record}" in citations and "lines 2–3" in Markup(citations).text
        assert len(versions) == 2
        listed = html.split('id="versions"', 1)[1].split("</ul>", 1)[0]
        for blob in versions:
            assert f"?version={blob[:12]}" in listed
        old = [b for b in versions if b[:12] not in html.split("version shown", 1)[1][:200]]
        older = client.get(f"/sources/{source}?version={old[0][:12]}")
        assert "epsilon" not in Markup(older.text).text and "delta" in older.text


# ---------------------------------------------------------------------------- review


def decision_form(html: str, record_id: str | None = None) -> dict[str, str]:
    """The fields of the review form for one record (None: the branch's)."""
    section = html
    if record_id is not None:
        section = html.split(f'id="pending-{record_id}"', 1)[1].split("</article>", 1)[0]
    fields = {}
    for attrs in Markup(section.split("</form>", 1)[0]).tags("input"):
        if attrs.get("type") == "hidden":
            fields[attrs["name"]] = attrs["value"]
    return fields


def test_review_shows_pending_changes_as_field_and_content_diffs(path):
    record = add(path, "line one\nline two")
    with opened(path, actor="mcp", review=True) as store:
        store.update(record, priority=75)
        added = store.add("an agent's new fact", kind="fact").id
    with served(path) as (client, _):
        html = client.get("/review").text
        text = Markup(html).text
        assert "lantern/review/mcp" in text
        changed = Markup(html.split(f'id="pending-{record}"', 1)[1].split("</article>")[0])
        assert "changed" in changed.text and "50 → 75" in changed.text
        assert "actor mcp" in changed.text and "Test Author" in changed.text
        new = Markup(html.split(f'id="pending-{added}"', 1)[1].split("</article>")[0])
        assert "added" in new.text and "an agent's new fact" in new.text
        # One form per record and one per branch, each with a reason field.
        assert len(forms(html)) == 3


def test_accept_and_reject_from_the_page_commit_as_the_cli_does_with_the_reviewer(path):
    accepted, rejected = agent_writes(path, "accept me", "reject me")
    reviewer = "Rita Reviewer <rita@example.com>"
    with served(path, author=reviewer) as (client, _):
        page = client.get("/review").text
        form = decision_form(page, accepted) | {"reason": "checked the transcript"}
        done = client.post("/review/accept", data=form, follow_redirects=False)
        assert done.status_code == 303, done.text
        shown = client.get(done.headers["location"])
        assert "accepted " + accepted in Markup(shown.text).text
        head = head_commit(path)
        trailers = parse_trailers(head.message)
        assert trailers["Lantern-Op"] == ["accept"]
        assert trailers["Lantern-Record"] == [accepted]
        assert trailers["Lantern-Reason"] == ["checked the transcript"]
        assert trailers["Lantern-Review-Actor"] == ["mcp"]
        assert f"{head.author.name} <{head.author.email}>" == reviewer
        # The accepted record is listed, and its page shows the accept commit.
        assert accepted in rows(client.get("/").text, "records")
        history = Markup(client.get(f"/records/{accepted}").text.split('id="history"')[1])
        assert str(head.id)[:12] in history.text and "checked the transcript" in history.text
        page = client.get("/review").text
        form = decision_form(page, rejected) | {"reason": "not true"}
        before = str(head.id)
        assert client.post("/review/reject", data=form).status_code == 200
        assert str(head_commit(path).id) == before  # reject leaves the store's branch alone
        repo = pygit2.Repository(str(path))
        rejection = repo[repo.references[MCP_BRANCH].target].peel(pygit2.Commit)
        assert parse_trailers(rejection.message)["Lantern-Op"] == ["reject"]
        assert parse_trailers(rejection.message)["Lantern-Reason"] == ["not true"]
        assert rejection.author.email == "rita@example.com"
        assert rejected not in rows(client.get("/").text, "records")
        assert "Nothing awaits review." in client.get("/review").text
        # What the CLI shows: the same decisions in git log.
        log = git(path, "log", "--all", "--format=%an|%s")
        assert "Rita Reviewer|accept 1 record from lantern/review/mcp" in log
        assert "Rita Reviewer|reject 1 record of lantern/review/mcp" in log


def test_accept_all_of_a_branch_from_its_form(path):
    ids = agent_writes(path, "one", "two")
    with served(path) as (client, _):
        form = decision_form(client.get("/review").text) | {"reason": "all good"}
        assert form["all"] == "1" and form["branch"] == "mcp"
        assert client.post("/review/accept", data=form).status_code == 200
        assert set(parse_trailers(head_commit(path).message)["Lantern-Record"]) == set(ids)


def test_self_approval_is_refused_with_the_librarys_message_and_nothing_changes(path):
    [mine] = agent_writes(path, "written by the cli in review mode", actor="cli")
    before = state(path)
    with served(path) as (client, _):
        form = decision_form(client.get("/review").text, mine)
        refused = client.post("/review/accept", data=form)
        assert refused.status_code == 400
        error = Markup(refused.text).text
        with opened(path) as store:
            try:
                store.review_accept([mine])
            except Exception as err:  # the library's own words, asked the CLI's way
                expected = err.message  # type: ignore[attr-defined]
        assert "self_approval" in error and expected in error
        assert state(path) == before
        assert mine in client.get("/review").text


@pytest.mark.parametrize("csrf", [None, "", "wrong", "x" * 43])
def test_a_post_without_the_right_csrf_token_changes_nothing(path, csrf):
    [pending] = agent_writes(path, "pending")
    before = state(path)
    with served(path) as (client, config):
        for action in ("/review/accept", "/review/reject"):
            data = {"id": pending, "branch": "mcp", "reason": "forged"}
            if csrf is not None:
                data["csrf"] = csrf
            refused = client.post(action, data=data)
            assert refused.status_code == 403
            assert "CSRF" in refused.text
            assert state(path) == before
        # The token of another server is not this one's.
        assert config.csrf != csrf


def test_a_csrf_token_short_of_the_servers_by_any_length_is_refused(path):
    """Only the whole token passes: a prefix of it (one character, all but the last) or the
    token with one more character changes nothing."""
    [pending] = agent_writes(path, "pending")
    before = state(path)
    with served(path) as (client, config):
        token = config.csrf
        for forged in (token[:1], token[:-1], token[: len(token) // 2], token + "x", token[1:]):
            for action in ("/review/accept", "/review/reject"):
                data = {
                    "id": pending,
                    "branch": "mcp",
                    "reason": "forged",
                    "csrf": forged,
                    "tip": tip(path, MCP_BRANCH),
                }
                refused = client.post(action, data=data)
                assert refused.status_code == 403, (forged, action)
                assert "CSRF" in refused.text
                assert state(path) == before
        # The whole token is accepted: the refusals above were the token's doing.
        decision = {"id": pending, "branch": "mcp", "csrf": token, "tip": tip(path, MCP_BRANCH)}
        done = client.post("/review/reject", data=decision)
        assert done.status_code in (200, 303), done.text
        assert state(path) != before


def test_a_bad_decision_shows_the_librarys_error_and_changes_nothing(path):
    agent_writes(path, "pending")
    before = state(path)
    seen = tip(path, MCP_BRANCH)
    with served(path) as (client, config):
        cases = [
            ({"id": "ffff"}, 404, "no pending record or source with id ffff"),
            ({"id": "xyz!"}, 400, "invalid_id"),
            ({}, 400, "give record ids, or all"),
            ({"all": "1", "branch": "../main"}, 400, "invalid_review_name"),
            ({"all": "1", "tip": None}, 400, "the form has no tip"),
            ({"all": "1", "tip": "not-hex"}, 400, "--expect: expected a review branch's tip"),
            ({"all": "1", "tip": "abc12"}, 400, "a prefix of 7 or more hex digits"),
        ]
        for data, status, message in cases:
            form = {"csrf": config.csrf, "tip": seen, **data}
            response = client.post("/review/accept", data={k: v for k, v in form.items() if v})
            assert response.status_code == status, (data, response.text[:300])
            assert message in Markup(response.text).text
            assert state(path) == before


def test_read_only_shows_review_without_buttons_and_refuses_every_post(path):
    [pending] = agent_writes(path, "pending for a read-only viewer")
    before = state(path)
    with served(path, read_only=True) as (client, config):
        page = client.get("/review")
        assert pending in page.text and "pending for a read-only viewer" in page.text
        assert forms(page.text) == []
        for action in ("/review/accept", "/review/reject"):
            data = {"csrf": config.csrf, "id": pending, "branch": "mcp"}
            assert client.post(action, data=data).status_code == 403
        assert state(path) == before
        for target in ("/", "/sources", "/changes", "/status", f"/records/{pending}?pending=1"):
            assert 'method="post"' not in client.get(target).text


# ---------------------------------------------------------------------------- changes, status


def test_the_changes_page_shows_diff_between_revisions_and_the_log(path):
    first = add(path, "first")
    start = git(path, "rev-parse", "HEAD").strip()
    second = add(path, "second")
    with opened(path) as store:
        store.archive(first, reason="done with it")
    with served(path) as (client, _):
        page = client.get(f"/changes?from={start}&to=HEAD")
        diff = Markup(page.text.split('id="diff"', 1)[1].split("</section>", 1)[0]).text
        assert f"added {second}" in diff and f"changed {first}" in diff
        assert "active → archived" in diff
        log = Markup(page.text.split('id="log"', 1)[1]).text
        assert "archive" in log and "done with it" in log and "Test Author" in log
        entries = [e.commit[:12] for e in Store(str(path)).log(3)]
        assert [e for e in entries if e in log] == entries
        nothing = client.get("/changes?from=HEAD&to=HEAD")
        assert "No record changed." in nothing.text


def test_the_status_page_shows_counts_and_links_each_failing_reference(path):
    source = ingest(path, b"one\ntwo\n")
    with opened(path) as store:
        good = store.add("fine", kind="fact", source_refs=[f"source:{source}#L1"]).id
        bad = store.add("will drift", kind="fact", source_refs=[f"source:{source}#L2"]).id
        store.sources.add([SourceInput(b"one\nchanged\n", "notes.md", uri="session:notes.md")])
    with served(path) as (client, _):
        page = client.get("/status")
        text = " ".join(Markup(page.text).text.split())
        # The counts, in words: two records, both active, one source, on branch main.
        assert "holds 2 records (2 active, 0 archived, 0 superseded) and 1 source" in text
        assert "git branch main" in text
        assert "2 source references checked; 1 do not hold." in text
        failing = page.text.split('id="verify"', 1)[1]
        assert f"/records/{bad}" in failing and f"/records/{good}" not in failing
        assert "drifted" in failing


# ---------------------------------------------------------------------------- live


def test_pages_follow_cli_writes_hand_edits_and_git_pull_without_a_restart(path, tmp_path):
    with served(path) as (client, _):
        assert rows(client.get("/").text, "records") == []
        made = lantern("memory", "add", "written by another process", "--kind", "fact", store=path)
        assert made.returncode == 0, made.stderr
        listed = client.get("/")
        assert "written by another process" in listed.text
        [record] = rows(listed.text, "records")
        # A hand edit of the file shows on the next load.
        file = next((path / "memory").rglob(f"{record}.md"))
        file.write_text(file.read_text().replace("written by another", "edited by hand in"))
        assert "edited by hand in process" in client.get("/").text
        git(path, "checkout", "--", ".")
        # A git pull from a clone that added a record.
        clone = tmp_path / "clone"
        git(tmp_path, "clone", "-q", str(path), str(clone))
        assert lantern("memory", "add", "pulled in", "--kind", "fact", store=clone).returncode == 0
        git(path, "pull", "-q", str(clone), "main")
        assert "pulled in" in client.get("/").text
        assert "pulled in" in client.get("/changes").text


def test_store_count_is_the_length_of_the_unpaged_list_for_every_kind_of_query(path):
    source = ingest(path, b"one\ntwo\n")
    with opened(path) as store:
        store.add("alpha tabs", kind="fact", priority=80, source_refs=[f"source:{source}#L1"])
        store.add("beta tabs", kind="goal", scope="user:ana")
        revision = git(path, "rev-parse", "HEAD").strip()
        old = store.add("gamma", kind="fact").id
        store.archive(old)
        store.add("delta", kind="fact", expires_at=int(time.time()) - 60)
        from lantern_git.model.query import RecordQuery

        queries = [
            RecordQuery(),
            RecordQuery(status="all", include_expired=True),
            RecordQuery(kinds=("fact",), min_priority=60),
            RecordQuery(scopes=("user:*",)),
            RecordQuery(text="tabs"),
            RecordQuery(cites=source),
            RecordQuery(limit=1, offset=1),
        ]
        # By hand from the records above: alpha and beta are active and unexpired; gamma is
        # archived, delta expired; paging does not change a count.
        assert [store.count(q) for q in queries] == [2, 4, 1, 1, 2, 1, 2]
        for query in queries:
            whole = RecordQuery(**{**query.__dict__, "limit": None, "offset": 0})
            assert store.count(query) == len(store.list(whole))
        assert store.count(RecordQuery(), at=revision) == 2


def test_an_accept_over_uncommitted_hand_edits_shows_the_librarys_error_and_changes_nothing(
    path,
):
    record = add(path, "edited by two people")
    with opened(path, actor="mcp", review=True) as store:
        store.update(record, priority=70)
    file = next((path / "memory").rglob(f"{record}.md"))
    file.write_text(file.read_text().replace("edited by two", "edited by hand by two"))
    before = state(path)
    with served(path) as (client, _):
        form = decision_form(client.get("/review").text, record)
        refused = client.post("/review/accept", data=form)
        assert refused.status_code == 500
        text = Markup(refused.text).text
        assert "uncommitted_changes" in text and "has uncommitted changes" in text
        assert "nothing was changed" in text
    assert state(path) == before


# ---------------------------------------------------------------------------- entities


def test_the_entity_page_shows_its_records_and_chunks_and_record_pages_link_it(path):
    with opened(path) as store:
        store.entities.add("person:ana", name="Ana García", aliases=["A. García"])
        named = store.add("Owns the Beta release.", kind="fact", entities=["person:ana"]).id
        linked = store.add("Lunch with [[A. García]].", kind="observation").id
        store.add("Someone else entirely.", kind="fact")
        store.add("Ask the [[host:petabyte]] team.", kind="fact")
    with served(path) as (client, _):
        record = client.get(f"/records/{named}")
        assert record.status_code == 200
        assert 'href="/entities/person%3Aana"' in record.text
        entity = client.get("/entities/person%3Aana")
        assert entity.status_code == 200
        assert "Ana García" in entity.text and "A. García" in entity.text
        assert "Records (2)" in entity.text
        assert f"/records/{named}" in entity.text and f"/records/{linked}" in entity.text
        assert "Someone else" not in entity.text
        mention = client.get("/entities/host:petabyte")
        assert mention.status_code == 200 and "No entity file" in mention.text
        assert client.get("/entities/person%3A..%2Fx").status_code in (400, 404)
        assert client.get("/entities/host:nowhere").status_code == 404
