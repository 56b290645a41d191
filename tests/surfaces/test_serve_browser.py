"""``lantern serve`` end to end in a real headless Chromium (the distribution's ``chromium``
and ``chromedriver``, which ``.ci/system-deps`` installs; nothing downloads a browser or a
driver: Selenium is given both paths and runs offline). One browser serves both tests."""

from __future__ import annotations

import os
import shutil

import pygit2
import pytest
from support.serve import LINE, serve_process
from support.stores import make_store

from lantern_git.evidence.sources import SourceInput
from lantern_git.git.repo import parse_trailers
from lantern_git.store import Store

# One browser serves the module (the fixture below): under pytest-xdist, on one worker.
pytestmark = pytest.mark.xdist_group("chromium")

TRANSCRIPT = (
    b"User: let's set up the repo\n"
    b"User: I always want separate branches for each feature\n"
    b"Assistant: noted, one branch per feature\n"
    b"User: and squash merges please\n"
)


def load_by_click(browser, element, seconds: float = 30) -> None:
    """Click ``element`` and wait, at most ``seconds``, for the page it loads: a click returns
    before a form's answer arrives on a busy machine, and the old page would be read."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    old = browser.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(browser, seconds).until(expected_conditions.staleness_of(old))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    # Selenium Manager is never asked for anything (both paths are given); offline, it could
    # not download a browser or a driver if it were.
    os.environ["SE_OFFLINE"] = "true"
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and chromedriver, "chromium and its driver: .ci/system-deps installs them"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    service = Service(executable_path=chromedriver)
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture
def reviewed_store(tmp_path):
    """A store with a transcript, and an agent's two pending writes (as ``lantern mcp
    --review`` makes them), the first citing lines 2-3 of the transcript."""
    path = make_store(tmp_path / "store")
    store = Store(str(path), actor="cli")
    source = store.sources.add([SourceInput(TRANSCRIPT, "chat.txt", uri="session:chat")])
    source_id = source[0].manifest.id
    store.close()
    agent = Store(str(path), actor="mcp", review=True)
    cited = agent.add(
        "Prefers a separate branch per feature",
        kind="preference",
        source_refs=[f"source:{source_id}#L2-L3"],
    ).id
    other = agent.add("Likes rebase merges", kind="preference").id
    agent.close()
    return path, cited, other


def test_a_person_accepts_a_pending_record_in_the_browser_and_sees_its_commit(
    browser, reviewed_store
):
    from selenium.webdriver.common.by import By

    path, cited, other = reviewed_store
    with serve_process(path, "--author", "Rita Reviewer <rita@example.com>") as (_, line):
        assert LINE.match(line), line
        url = line.removeprefix("lantern serve: ")
        browser.get(url)
        assert "token=" not in browser.current_url  # redirected: the token is in a cookie
        load_by_click(browser, browser.find_element(By.LINK_TEXT, "Review"))
        article = browser.find_element(By.ID, f"pending-{cited}")
        assert "Prefers a separate branch per feature" in article.text
        article.find_element(By.NAME, "reason").send_keys("the transcript says so")
        load_by_click(browser, article.find_element(By.CSS_SELECTOR, "button[value=accept]"))
        assert f"accepted {cited}" in browser.find_element(By.ID, "notice").text
        # Still pending: the other write, with its own buttons.
        assert browser.find_elements(By.ID, f"pending-{other}")
        assert not browser.find_elements(By.ID, f"pending-{cited}")
        load_by_click(browser, browser.find_element(By.LINK_TEXT, "Records"))
        listed = browser.find_element(By.ID, "records")
        assert cited in listed.text and other not in listed.text
        load_by_click(browser, listed.find_element(By.LINK_TEXT, cited))
        repo = pygit2.Repository(str(path))
        head = repo[repo.head.target]
        history = browser.find_element(By.ID, "history").text
        assert str(head.id)[:12] in history
        assert "accept" in history and "the transcript says so" in history
        assert "Rita Reviewer <rita@example.com>" in history
        assert head.author.email == "rita@example.com"


def test_the_record_page_shows_the_cited_lines_in_a_screenshot(browser, reviewed_store, tmp_path):
    from selenium.webdriver.common.by import By

    path, cited, _ = reviewed_store
    with serve_process(path, "--read-only") as (_, line):
        browser.get(line.removeprefix("lantern serve: "))
        browser.get(browser.current_url.rstrip("/") + f"/records/{cited}?pending=1")
        lines = browser.find_element(By.CSS_SELECTOR, "#evidence pre.cited")
        assert lines.is_displayed()
        assert lines.text.splitlines() == [
            "2User: I always want separate branches for each feature",
            "3Assistant: noted, one branch per feature",
        ]
        assert lines.size["height"] > 20 and lines.size["width"] > 200
        # The package's stylesheet is loaded (the policy allows it) and marks the lines.
        assert lines.value_of_css_property("border-left-style") == "solid"
        shot = tmp_path / "record.png"
        assert browser.save_screenshot(str(shot))
        data = shot.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
        keep = os.environ.get("KEEP_SCREENSHOT")
        if keep:  # to look at it: KEEP_SCREENSHOT=/tmp/record.png pytest ...
            shutil.copy(shot, keep)


def test_each_review_button_does_what_it_says_reject_rejects(browser, reviewed_store):
    """Clicking a pending record's Reject in the browser records a reject (its commit on the
    review branch, nothing on the store's branch); the page's Accept beside it is not what
    the click sends. The buttons' targets are only proved by a browser following them."""
    from selenium.webdriver.common.by import By

    path, cited, other = reviewed_store
    repo = pygit2.Repository(str(path))
    head = str(repo.head.target)
    with serve_process(path, "--author", "Rita Reviewer <rita@example.com>") as (_, line):
        browser.get(line.removeprefix("lantern serve: "))
        load_by_click(browser, browser.find_element(By.LINK_TEXT, "Review"))
        article = browser.find_element(By.ID, f"pending-{other}")
        article.find_element(By.NAME, "reason").send_keys("not what the user said")
        load_by_click(browser, article.find_element(By.CSS_SELECTOR, "button[value=reject]"))
        assert f"rejected {other}" in browser.find_element(By.ID, "notice").text
        assert not browser.find_elements(By.ID, f"pending-{other}")
        assert browser.find_elements(By.ID, f"pending-{cited}")
    repo = pygit2.Repository(str(path))
    assert str(repo.head.target) == head  # a reject leaves the store's branch alone
    tip = repo[repo.references["refs/heads/lantern/review/mcp"].target].peel(pygit2.Commit)
    trailers = parse_trailers(tip.message)
    assert trailers["Lantern-Op"] == ["reject"]
    assert trailers["Lantern-Record"] == [other]
    assert trailers["Lantern-Reason"] == ["not what the user said"]
    assert tip.author.email == "rita@example.com"
