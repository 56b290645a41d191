"""The review page (``/review``): every record and source waiting on a review branch, each
pending record with its evidence; and the two decisions its forms post (accept, reject), each
bound to the branch tip the page showed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.responses import RedirectResponse, Response

from ...errors import InvalidInput, LanternError
from ..security import csrf_ok
from .shared import Evidence, evidence_of

if TYPE_CHECKING:
    from starlette.requests import Request

    from ...review import ReviewList
    from ...store import Store
    from ..pages import Endpoint, Pages
    from ..params import Params

TEMPLATE = "review.html"
DECISIONS = ("accept", "reject")


@dataclass
class ReviewContext:
    review: ReviewList
    # Each pending record's references (by its id), with verify's finding.
    evidence: dict[str, list[Evidence]]
    # What the last decision did (after its redirect), or None.
    notice: str | None
    # A decision the library refused, shown over the page as it is now.
    error: LanternError | None = None


def data(store: Store, params: Params) -> ReviewContext:
    listing = store.review_list()
    evidence = {
        pending.id: evidence_of(store, pending.record)
        for pending in listing.records
        if pending.record is not None
    }
    return ReviewContext(review=listing, evidence=evidence, notice=notice(params))


def notice(params: Params) -> str | None:
    op = params.text("done")
    if op not in DECISIONS:
        return None
    what = params.text("records")
    verb = "accepted" if op == "accept" else "rejected"
    return f"{verb} {what or 'nothing'} in commit {params.text('commit')[:12]}"


def decide(pages: Pages, op: str) -> Endpoint:
    """The endpoint of a decision (``op``: accept or reject): it runs alone, as a write; a
    refused one shows the review page as it is now with the library's error (a stale form:
    409, so the person sees what changed since)."""

    async def endpoint(request: Request) -> Response:
        form = await request.form()
        if not csrf_ok(form.get("csrf"), pages.config.csrf):
            refused = InvalidInput(
                "the form's CSRF token is missing or wrong: reload the review page "
                "and try again (nothing was changed)",
                code="csrf",
            )
            return pages.failure(request, refused, 403)
        ids = [str(i) for i in form.getlist("id") if str(i).strip()]
        everything = form.get("all") == "1"
        branch = str(form.get("branch") or "") or None
        reason = str(form.get("reason") or "").strip() or None
        # The branch's tip the page was rendered with: a decision is about what the person
        # saw, never about what arrived on the branch after (docs/review.md).
        expect = str(form.get("tip") or "").strip() or None
        if bool(ids) == everything:
            refused = InvalidInput("give record ids, or all (not both)", code="usage_error")
            return await pages.show(request, TEMPLATE, data, refused)
        if expect is None:
            refused = InvalidInput(
                "the form has no tip (the review branch's commit it was shown with): "
                "reload the review page and decide there",
                code="usage_error",
            )
            return await pages.show(request, TEMPLATE, data, refused)

        def call(store: Store) -> Any:
            decide_with = store.review_accept if op == "accept" else store.review_reject
            wanted = None if everything else ids
            return decide_with(wanted, branch=branch, reason=reason, expect=expect)

        try:
            decision = await pages.library.call(call)
        except LanternError as err:
            return await pages.show(request, TEMPLATE, data, err)
        what = ",".join(decision.records + decision.sources)
        query = urlencode({"done": op, "records": what, "commit": decision.commit or ""})
        return RedirectResponse(f"/review?{query}", status_code=303)

    return endpoint
