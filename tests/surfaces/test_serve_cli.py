"""``lantern serve`` as a real process: it prints one line with its URL and token, serves a
page to the holder of the token and nothing to anyone else, and says so when it is not bound
to loopback."""

from __future__ import annotations

import http.cookiejar
import urllib.error
import urllib.request

import pytest
from support.cli import lantern
from support.serve import LINE, serve_process
from support.stores import make_store


def fetch(url: str, opener=None) -> tuple[int, str]:
    try:
        with (opener or urllib.request.build_opener()).open(url, timeout=20) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_serve_prints_its_url_with_a_token_and_serves_only_the_token_holder(tmp_path):
    path = make_store(tmp_path / "store")
    assert (
        lantern("memory", "add", "served over http", "--kind", "fact", store=path).returncode == 0
    )
    with serve_process(path) as (proc, line):
        match = LINE.match(line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None else "")  # type: ignore[union-attr]
        base, host, token = match.groups()
        assert host.startswith("127.0.0.1:") and host != "127.0.0.1:0" and len(token) >= 40
        status, body = fetch(base)
        assert status == 401 and "served over http" not in body
        status, body = fetch(f"{base}?token=wrong")
        assert status == 403 and "served over http" not in body
        # The printed URL: the token becomes a cookie, and the page follows.
        jar = http.cookiejar.CookieJar()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        status, body = fetch(line.removeprefix("lantern serve: "), browser)
        assert status == 200 and "served over http" in body
        assert [c.name for c in jar] == [f"lantern_token_{host.split(':')[1]}"]
        status, body = fetch(f"{base}review", browser)
        assert status == 200 and "Nothing awaits review." in body
        assert proc.poll() is None


def test_serve_warns_when_bound_beyond_loopback(tmp_path):
    path = make_store(tmp_path / "store")
    with serve_process(path, "--host", "0.0.0.0") as (proc, line):
        assert LINE.match(line), line
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "warning: listening on 0.0.0.0, not loopback" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--author", "no email"], 'is not in the form "Name <email>"'),
        (["--port", "70000"], "--port: 70000 is not a port"),
    ],
)
def test_serve_refuses_bad_options_before_it_listens(tmp_path, args, message):
    path = make_store(tmp_path / "store")
    result = lantern("serve", "--port", "0", *args, timeout=30, store=path)
    assert result.returncode == 2 and message in result.stderr and result.stdout == ""


def test_serve_json_prints_one_document_naming_its_address(tmp_path):
    import json

    path = make_store(tmp_path / "store")
    with serve_process(path, "--json", "--read-only") as (_, line):
        document = json.loads(line)
        assert sorted(document) == ["host", "port", "read_only", "url"]
        assert document["host"] == "127.0.0.1" and document["read_only"] is True
        assert document["url"].startswith(f"http://127.0.0.1:{document['port']}/?token=")
        assert fetch(document["url"].split("?")[0])[0] == 401
        jar = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        assert fetch(document["url"], jar)[0] == 200


def test_serve_json_reports_a_bad_option_as_a_json_error(tmp_path):
    import json

    path = make_store(tmp_path / "store")
    result = lantern("serve", "--json", "--author", "no email", timeout=30, store=path)
    assert result.returncode == 2 and result.stdout == ""
    assert json.loads(result.stderr)["error"]["code"] == "invalid_author"
