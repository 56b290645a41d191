"""``lantern serve``: memory a person can inspect and review in a browser.

A thin layer, as the CLI and the MCP server are: each page (a module of ``views/``) reads its
parameters, calls the same library functions the CLI commands call
(:class:`~lantern_git.store.Store`, ``store.sources``, ``store.review_*``) and renders their
answers with Jinja2 templates, escaped everywhere. The only writes are the review decisions,
through ``Store.review_accept``/``review_reject``.

Starlette, uvicorn and Jinja2 are imported only here, and this package only by ``lantern
serve``: the rest of lantern never pays for them.
"""
