"""The web app of ``lantern serve``: one route per page, each a parse, a library call and a
template.

The store is opened once, with the watch the MCP server uses (``Store(watch=True)``), so a
page with nothing changed answers from the index it kept, and a CLI write, a hand edit or a
``git pull`` shows on the next load. Library calls run one at a time in a worker thread (the
store is not thread-safe); the writer lock serializes the server against other processes.
"""

from __future__ import annotations

import difflib
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

import anyio.to_thread
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..core.fields import KINDS, SEARCH_MODES
from ..core.hidden import display_lines, hidden_in, reveal
from ..core.paging import Page
from ..core.timespec import field_time, human_time
from ..errors import InvalidInput, LanternError, NotFound
from ..model.query import RecordQuery
from ..model.source import SourceRef, is_source_ref
from ..review import PendingVersion
from .security import WILDCARDS, Guard, allowed_hosts, csrf_ok

if TYPE_CHECKING:
    from ..model.record import Record
    from ..review import ReviewBranch, ReviewList
    from ..store import Store

T = TypeVar("T")

PAGE_SIZE = 50
LOG_SIZE = 50
STATUSES = ("active", "archived", "superseded", "all")
# A lantern error's exit code (the CLI's) as an HTTP status, mapped once; an error code that
# needs its own status, by code.
HTTP_STATUS = {2: 400, 3: 404, 4: 422}
HTTP_STATUS_BY_CODE = {"review_changed": 409}


def http_status(err: LanternError) -> int:
    return HTTP_STATUS_BY_CODE.get(err.code) or HTTP_STATUS.get(err.exit_code, 500)


@dataclass
class ServeConfig:
    """What a server was started with: where it answers, its tokens, who reviews."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    read_only: bool = False
    reviewer: str = ""

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/?token={self.token}"


def open_store(path: str | None, author: str | None) -> Store:
    """The store as ``lantern serve`` keeps it: watched, and with the CLI's actor, so that the
    library's self-approval rule treats a person at the browser as at the terminal (a change
    written from the CLI in review mode under the same review name is not theirs to accept)."""
    from ..store import Store

    return Store.discover(path, actor="cli", author=author, watch=True)


class Library:
    """The one store, called one call at a time."""

    def __init__(self, store: Store):
        self.store = store
        self._lock = threading.Lock()

    async def call(self, func: Callable[[Store], T]) -> T:
        def locked() -> T:
            with self._lock:
                return func(self.store)

        return await anyio.to_thread.run_sync(locked)


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("lantern_git.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # Every value a page prints shows its hidden characters (core/hidden.py): a stored
        # right-to-left override must not make the browser show the opposite of the text.
        finalize=_shown,
    )
    env.filters["when"] = lambda value: human_time(value) if value is not None else ""
    env.globals["field_time"] = field_time
    env.globals["hidden_in"] = hidden_in
    env.globals["display_lines"] = display_lines
    env.tests["hidden"] = lambda value: bool(hidden_in(value))
    env.filters["short"] = lambda value: (value or "")[:12]
    env.globals["query"] = _query_string
    env.globals["content_diff"] = _content_diff
    return env


def _shown(value: Any) -> Any:
    """What ``{{ value }}`` prints: its hidden characters as ``<U+XXXX>``, and a list (a
    record's ``source_refs``, a field's old and new value on the Changes page) as its items,
    not as Python writes a list. Markup (a macro's output) was shown through here already."""
    if isinstance(value, Markup) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return ", ".join(reveal(str(item)) for item in value)
    return reveal(value if isinstance(value, str) else str(value))


def _query_string(params: dict[str, Any], **changes: Any) -> str:
    """``?a=1&b=2`` of ``params`` with ``changes`` applied (None removes a key)."""
    merged = {**params, **changes}
    pairs: list[tuple[str, str]] = []
    for key, value in merged.items():
        if value is None or value == "" or value is False:
            continue
        for one in value if isinstance(value, (list, tuple)) else [value]:
            pairs.append((key, str(one)))
    return "?" + urlencode(pairs) if pairs else "?"


def create_app(store: Store, config: ServeConfig) -> Starlette:
    """The app over ``store``: every route behind :class:`~.security.Guard`."""
    library = Library(store)
    env = _environment()

    def page(request: Request, template: str, status: int = 200, **context: Any) -> Response:
        html = env.get_template(template).render(
            config=config, path=request.url.path, store_root=store.root, **context
        )
        return HTMLResponse(html, status_code=status)

    def failure(request: Request, err: LanternError, **context: Any) -> Response:
        status = http_status(err)
        return page(request, "error.html", status, error=err, **context)

    async def records(request: Request) -> Response:
        params = request.query_params
        form: dict[str, Any] = {
            # Scopes hold no whitespace: one field may give several.
            "scope": [part for s in params.getlist("scope") for part in s.split()],
            "kind": params.getlist("kind"),
            "status": params.get("status", "active"),
            "min_priority": params.get("min_priority", ""),
            "min_urgency": params.get("min_urgency", ""),
            "include_expired": params.get("include_expired") == "1",
            "at": params.get("at", ""),
            "q": params.get("q", ""),
            "mode": params.get("mode", ""),
            "pending": params.get("pending") == "1",
        }
        try:
            limit = _int(params.get("limit"), "limit", PAGE_SIZE)
            offset = _int(params.get("offset"), "offset", 0)
            query = RecordQuery.from_options(
                scope=form["scope"],
                kind=form["kind"],
                status=form["status"],
                min_priority=_int(form["min_priority"], "min_priority"),
                min_urgency=_int(form["min_urgency"], "min_urgency"),
                include_expired=form["include_expired"],
                query=form["q"] if form["mode"] == "list" else None,
                page=Page(limit, offset),
            )
            searching = bool(form["q"].strip()) and form["mode"] != "list"
            at = form["at"] or None

            def answer(s: Store) -> tuple[list[Any], int | None]:
                if searching:
                    hits = s.search(
                        form["q"],
                        query,
                        mode=form["mode"] or None,
                        include_pending=form["pending"],
                    )
                    return [_Row.of(h.record, h.score) for h in hits], None
                found = s.list(query, at=at, include_pending=form["pending"])
                total = None if form["pending"] else s.count(query, at=at)
                return [_Row.of(r) for r in found], total

            hits, total = await library.call(answer)
        except LanternError as err:
            return failure(request, err, form=form)
        return page(
            request,
            "records.html",
            hits=hits,
            total=total,
            form=form,
            params=form | {"limit": limit if limit != PAGE_SIZE else None},
            offset=offset,
            limit=limit,
            searching=searching,
            kinds=KINDS,
            statuses=STATUSES,
            modes=SEARCH_MODES,
        )

    async def record(request: Request) -> Response:
        ref = request.path_params["record_id"]
        at = request.query_params.get("at") or None
        pending = request.query_params.get("pending") == "1"

        def answer(s: Store) -> dict[str, Any]:
            found = s.get(ref, at=at, include_pending=pending)
            try:
                history = s.record_history(found.id).entries
            except NotFound:
                if not pending:
                    raise
                history = []  # added on a review branch: its commits are the review page's
            replaced_by = sorted(
                {
                    other
                    for entry in history
                    if entry.op == "supersede"
                    for other in entry.records
                    if other != found.id
                    and any(c.field == "status" and c.new == "superseded" for c in entry.changes)
                }
            )
            is_pending = isinstance(found, PendingVersion)
            return {
                "record": found,
                "is_pending": is_pending,
                "history": history,
                "replaced_by": replaced_by,
                "evidence": [_Evidence.of(r, c) for r, c in s.sources.check_refs(found)],
                # Where it waits, to accept or reject it here, beside its evidence.
                "waiting": _waiting(s.review_list(), found.id) if is_pending else [],
            }

        try:
            context = await library.call(answer)
        except LanternError as err:
            return failure(request, err)
        return page(request, "record.html", at=at, pending=pending, **context)

    async def entity(request: Request) -> Response:
        key = request.path_params["key"]

        def answer(s: Store) -> dict[str, Any]:
            return s.entity_show(key, RecordQuery(status="all", include_expired=True))

        try:
            shown = await library.call(answer)
        except LanternError as err:
            return failure(request, err)
        return page(request, "entity.html", **shown)

    async def sources(request: Request) -> Response:
        params = request.query_params
        try:
            limit = _int(params.get("limit"), "limit", PAGE_SIZE)
            offset = _int(params.get("offset"), "offset", 0)
            kinds = params.getlist("kind")
            manifests = await library.call(
                lambda s: s.sources.list(kinds=kinds, limit=limit + 1, offset=offset)
            )
        except LanternError as err:
            return failure(request, err)
        return page(
            request,
            "sources.html",
            manifests=manifests[:limit],
            more=len(manifests) > limit,
            offset=offset,
            limit=limit,
            kinds=kinds,
        )

    async def source(request: Request) -> Response:
        ref = request.path_params["source_id"]
        version = request.query_params.get("version") or None

        def answer(s: Store) -> dict[str, Any]:
            source_id = s.sources.resolve(ref)
            wanted = f"source:{source_id}@{version}" if version else source_id
            view = s.sources.body(wanted)
            shown = _parsed(view.ref or "")
            blob = shown.blob or "" if shown is not None else ""
            current = version is None or _is_current(s, source_id, view.ref)
            citing = s.list(RecordQuery(status="all", include_expired=True, cites=source_id))
            return {
                "view": view,
                "source_id": source_id,
                "blob": blob,
                "versions": s.sources.versions(source_id),
                "citations": [
                    _Citation.of(record, ref, check, blob, current)
                    for record in citing
                    for ref, check in s.sources.check_refs(record)
                    if check is not None and _cites(ref, source_id)
                ],
            }

        try:
            context = await library.call(answer)
        except LanternError as err:
            return failure(request, err)
        view = context["view"]
        lines = display_lines(view.text) if view.text else []
        cited: dict[int, list[str]] = {}
        for citation in context["citations"]:
            if citation.shown is not None:
                for number in range(citation.shown[0], citation.shown[1] + 1):
                    cited.setdefault(number, []).append(citation.record.id)
        return page(request, "source.html", lines=lines, cited=cited, **context)

    async def review(request: Request, error: LanternError | None = None) -> Response:
        """The review page; after a refused decision, with the library's error (a stale form:
        409, and the page as it is now, so the person sees what changed since)."""
        try:
            listing, evidence = await library.call(_review_with_evidence)
        except LanternError as err:
            return failure(request, err)
        status = http_status(error) if error is not None else 200
        return page(
            request,
            "review.html",
            status,
            review=listing,
            evidence=evidence,
            notice=_notice(request),
            error=error,
        )

    def decide(op: str) -> Callable[[Request], Any]:
        async def handler(request: Request) -> Response:
            form = await request.form()
            if not csrf_ok(form.get("csrf"), config.csrf):
                return page(
                    request,
                    "error.html",
                    403,
                    error=InvalidInput(
                        "the form's CSRF token is missing or wrong: reload the review page "
                        "and try again (nothing was changed)",
                        code="csrf",
                    ),
                )
            ids = [str(i) for i in form.getlist("id") if str(i).strip()]
            everything = form.get("all") == "1"
            branch = str(form.get("branch") or "") or None
            reason = str(form.get("reason") or "").strip() or None
            # The branch's tip the page was rendered with: a decision is about what the person
            # saw, never about what arrived on the branch after (docs/review.md).
            expect = str(form.get("tip") or "").strip() or None
            if bool(ids) == everything:
                error = InvalidInput("give record ids, or all (not both)", code="usage_error")
                return await review(request, error=error)
            if expect is None:
                error = InvalidInput(
                    "the form has no tip (the review branch's commit it was shown with): "
                    "reload the review page and decide there",
                    code="usage_error",
                )
                return await review(request, error=error)

            def call(s: Store) -> Any:
                decide_with = s.review_accept if op == "accept" else s.review_reject
                wanted = None if everything else ids
                return decide_with(wanted, branch=branch, reason=reason, expect=expect)

            try:
                decision = await library.call(call)
            except LanternError as err:
                return await review(request, error=err)
            what = ",".join(decision.records + decision.sources)
            query = urlencode({"done": op, "records": what, "commit": decision.commit or ""})
            return RedirectResponse(f"/review?{query}", status_code=303)

        return handler

    async def changes(request: Request) -> Response:
        """A diff (from, to: HEAD and the working tree unless given) or one commit's change
        (commit), and the log, each of whose commits links to its change. Opened plain, the
        page shows what is uncommitted, or, with nothing uncommitted, the last commit's
        change rather than an empty diff."""
        params = request.query_params
        old = params.get("from") or None
        new = params.get("to") or None
        commit = params.get("commit") or None
        try:
            limit = _int(params.get("limit"), "limit", LOG_SIZE)
            log = await library.call(lambda s: s.log(limit))
            if commit is None:
                diff = await library.call(lambda s: s.diff(old, new))
            clean = commit is None and old is new is None and not _any_change(diff)
            if clean and log:
                commit = log[0].commit
            if commit is not None:
                diff = await library.call(lambda s: _commit_diff(s, commit))
        except LanternError as err:
            return failure(request, err)
        return page(
            request,
            "changes.html",
            diff=diff,
            log=log,
            old=old or "",
            new=new or "",
            commit=commit or "",
            clean=clean,
            limit=limit,
        )

    async def status(request: Request) -> Response:
        try:
            info = await library.call(lambda s: s.status())
            report = await library.call(lambda s: s.sources.verify())
        except LanternError as err:
            return failure(request, err)
        return page(request, "status.html", info=info, report=report)

    static = resources.files("lantern_git.web") / "static"
    routes = [
        Route("/", records),
        Route("/records/{record_id}", record),
        Route("/entities/{key}", entity),
        Route("/sources", sources),
        Route("/sources/{source_id}", source),
        Route("/review", review),
        Route("/review/accept", decide("accept"), methods=["POST"]),
        Route("/review/reject", decide("reject"), methods=["POST"]),
        Route("/changes", changes),
        Route("/status", status),
        Mount("/static", StaticFiles(directory=str(static)), name="static"),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(
        Guard,
        token=config.token,
        hosts=allowed_hosts(config.host, config.port),
        port=config.port,
        read_only=config.read_only,
        any_address=config.host in WILDCARDS,
    )
    return app


def _review_with_evidence(store: Store) -> tuple[ReviewList, dict[str, list[_Evidence]]]:
    """The review list, and the evidence each pending record cites with verify's finding."""
    listing = store.review_list()
    evidence = {
        pending.id: [_Evidence.of(r, c) for r, c in store.sources.check_refs(pending.record)]
        for pending in listing.records
        if pending.record is not None
    }
    return listing, evidence


def _waiting(listing: ReviewList, record_id: str) -> list[tuple[ReviewBranch, list[str]]]:
    """The review branches a record is pending on, each with the ids decided with it."""
    return [
        (branch, [pending.id, *pending.decided_with])
        for branch in listing.branches
        for pending in branch.records
        if pending.id == record_id
    ]


def _any_change(diff: Any) -> bool:
    return bool(diff.added or diff.removed or diff.changed or diff.problems)


def _commit_diff(store: Store, commit: str) -> Any:
    """The records ``commit`` changed: from its parent to it (a first commit, which has no
    parent, from itself: lantern's first commit holds no record)."""
    try:
        return store.diff(f"{commit}^", commit)
    except LanternError:
        return store.diff(commit, commit)


def _int(value: str | None, name: str, default: int | None = None) -> Any:
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(
            f"{name}: expected a whole number, got {value!r}", code="usage_error"
        ) from None


def _notice(request: Request) -> str | None:
    params = request.query_params
    op = params.get("done")
    if op not in ("accept", "reject"):
        return None
    what = params.get("records", "")
    verb = "accepted" if op == "accept" else "rejected"
    return f"{verb} {what or 'nothing'} in commit {params.get('commit', '')[:12]}"


def _content_diff(old: object, new: object) -> list[str]:
    """A line diff of two contents (either may be absent), as ``+``/``-``/`` `` lines."""
    before = display_lines(old) if isinstance(old, str) else []
    after = display_lines(new) if isinstance(new, str) else []
    return [line for line in difflib.ndiff(before, after) if not line.startswith("?")]


@dataclass
class _Row:
    """A listed or found record, as one row of the records page."""

    record: Record
    score: float | None
    pending: bool

    @classmethod
    def of(cls, record: Record, score: float | None = None) -> _Row:
        return cls(record, score, isinstance(record, PendingVersion))


@dataclass
class _Evidence:
    """One reference of a record, as the record page shows it."""

    ref: str
    source_id: str | None
    blob: str | None
    problem: str | None
    detail: str
    lines: tuple[int, int] | None
    text: str | None
    moved_to: tuple[int, int] | None

    @classmethod
    def of(cls, ref: str, check: Any) -> _Evidence:
        if check is None:
            return cls(ref, None, None, None, "", None, None, None)
        parsed = _parsed(ref)
        return cls(
            ref,
            parsed.source_id if parsed else None,
            parsed.blob if parsed else None,
            check.problem,
            check.detail,
            check.lines,
            check.text,
            check.moved_to,
        )


@dataclass
class _Citation:
    """One reference of a record to the source shown: its lines, and where they are in the
    version shown (None when they are not in it)."""

    record: Record
    ref: str
    blob: str | None
    start: int | None
    end: int | None
    shown: tuple[int, int] | None

    @classmethod
    def of(cls, record: Record, ref: str, check: Any, blob: str, current: bool) -> _Citation:
        parsed = _parsed(ref)
        start, end = (parsed.start, parsed.last) if parsed else (None, None)
        shown: tuple[int, int] | None = None
        if current:
            # Verify's finding: the pinned text still at its lines, or where it moved to.
            if check.problem == "ok" and start is not None:
                shown = check.lines
            elif check.problem == "drifted":
                shown = check.moved_to
        elif parsed is not None and parsed.blob and blob.startswith(parsed.blob):
            shown = (start, end) if start is not None and end is not None else None
        return cls(record, ref, parsed.blob if parsed else None, start, end, shown)


def _is_current(store: Store, source_id: str, ref: str | None) -> bool:
    try:
        return store.sources.body(source_id).ref == ref
    except NotFound:  # removed: only pinned versions are left
        return False


def _cites(ref: str, source_id: str) -> bool:
    parsed = _parsed(ref)
    return parsed is not None and parsed.source_id == source_id


def _parsed(ref: str) -> SourceRef | None:
    """A ``source:`` reference parsed, None for an opaque one or one that does not parse (a
    hand edit; verify reports it)."""
    if not is_source_ref(ref):
        return None
    try:
        return SourceRef.parse(ref)
    except LanternError:
        return None
