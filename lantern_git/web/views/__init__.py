"""The pages of ``lantern serve``, one module each. A page's module says what the page shows:
a pure ``data(store, params) -> context`` (a dataclass the template reads) that tests call on a
real store without HTTP, and the name of its template. Running it, rendering it and mapping a
refusal to a status are :mod:`lantern_git.web.pages`' job, once for every page."""
