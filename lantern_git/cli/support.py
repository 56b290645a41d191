"""What every CLI command shares: options, opening the store, error mapping.

Only click and the standard library are imported here, so ``lantern --help`` stays fast;
each command imports the library parts it needs when it runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, overload

import click

from ..core.fields import (
    DEFAULT_CONFIDENCE,
    DEFAULT_PRIORITY,
    DEFAULT_SCOPE,
    DEFAULT_STATUS,
    DEFAULT_URGENCY,
    KINDS,
    SEARCH_MODES,
)
from ..errors import InvalidInput, LanternError

if TYPE_CHECKING:
    from ..core.progress import Lines
    from ..store import Store
    from .render import Output


class LazyCommand(NamedTuple):
    """A command a group loads when it is used: the module under ``lantern_git.cli`` whose
    ``register(cli, memory)`` adds it, and the first paragraph of its help (None: hidden),
    which ``--help`` lists without importing the module."""

    module: str
    summary: str | None


class LanternGroup(click.Group):
    """Maps lantern's typed errors and click's usage errors to the contract's exit codes, and
    loads the commands of ``lazy`` (name: :class:`LazyCommand`) only when one is used: click's
    lazy-loading group pattern, so ``lantern --help`` and the commands that need none of them
    do not pay for their modules."""

    def __init__(self, *args: Any, lazy: dict[str, LazyCommand] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def load(self, module: str) -> None:
        """Adds ``module``'s commands (once); they register onto this group and its
        ``memory`` group, as when they were imported eagerly."""
        names = [name for name, entry in self.lazy.items() if entry.module == module]
        if all(name in self.commands for name in names):
            return
        import importlib

        importlib.import_module(f"{__package__}.{module}").register(self, self.commands["memory"])

    def every_command(self) -> MutableMapping[str, click.Command]:
        """Every command, each lazy module loaded, in the order they registered before they
        were lazy (the eager ones, then the modules in the table's order): the references
        generated from the commands list them in that order."""
        for entry in self.lazy.values():
            self.load(entry.module)
        return self.commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.load(self.lazy[cmd_name].module)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's listing, but a command not loaded yet is described by its table entry, whose
        # summary click shortens exactly as it shortens the command's own help.
        listed = [
            (name, self.commands.get(name) or click.Command(
                name, help=self.lazy[name].summary, hidden=self.lazy[name].summary is None))
            for name in self.list_commands(ctx)
        ]  # fmt: skip
        shown = [(name, command) for name, command in listed if not command.hidden]
        if shown:
            limit = formatter.width - 6 - max(len(name) for name, _ in shown)
            with formatter.section("Commands"):
                formatter.write_dl([(n, c.get_short_help_str(limit)) for n, c in shown])

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        # click suggests a command whose name is close (stauts: status); a name that is a
        # command one level down (search: memory search, source search) it cannot see.
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as err:
            nested = [
                f"'lantern {name} {args[0]}'"
                for name, group in sorted(self.every_command().items())
                if args and isinstance(group, click.Group) and not group.hidden
                and args[0] in group.commands and not group.commands[args[0]].hidden
            ]  # fmt: skip
            if nested and "Did you mean" not in err.message:
                hint = f"{err.message} Did you mean {' or '.join(nested)}?"
                raise click.UsageError(hint, err.ctx) from None
            raise

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        args = list(sys.argv[1:] if args is None else args)
        as_json = "--json" in args
        from . import render

        # The width click's help would take (its HelpFormatter's rule), given so that click
        # never imports shutil for it.
        extra.setdefault("terminal_width", max(min(render.terminal_columns(80), 80) - 2, 50))

        try:
            code = super().main(
                args, prog_name or "lantern", complete_var, standalone_mode=False, **extra
            )
        except click.UsageError as err:
            render.error(InvalidInput(err.format_message(), code="usage_error"), as_json)
            code = 2
        except click.ClickException as err:
            render.error(err, as_json, code="error")
            code = err.exit_code
        except click.Abort:
            sys.stderr.write("Aborted!\n")
            code = 1
        except LanternError as err:
            render.error(err, as_json)
            code = err.exit_code
        except BrokenPipeError:
            code = 0
            _silence_stdout()
        except OSError as err:
            _debug_traceback()
            render.error(err, as_json, code="io_error")
            code = 1
        except Exception as err:
            code = _internal_error(err, as_json)
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


def _internal_error(err: Exception, as_json: bool) -> int:
    """A bug, not a user error: one clear line, the traceback only when LANTERN_DEBUG=1."""

    from . import render

    _debug_traceback()
    message = f"internal error: {type(err).__name__}: {err}"
    if not as_json:
        message += " (set LANTERN_DEBUG=1 for the traceback)"
    render.error(Exception(message), as_json, code="internal_error")
    return 1


def _debug_traceback() -> None:
    from ..core.config import environment

    if environment().debug:
        import traceback

        traceback.print_exc()


def _silence_stdout() -> None:

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--json", "as_json", is_flag=True, help="Write one JSON document to stdout."
    )(func)


def store_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--store",
        "store_path",
        metavar="PATH",
        default=None,
        help="The store to use (default: $LANTERN_STORE, the enclosing store, or the default).",
    )(func)


def author_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--author",
        metavar='"NAME <EMAIL>"',
        default=None,
        help="Commit author (default: $LANTERN_AUTHOR, else the repository's git identity).",
    )(func)


def reason_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--reason", metavar="TEXT", default=None, help="Why: recorded as Lantern-Reason."
    )(func)


def common(func: Callable[..., Any]) -> Callable[..., Any]:
    """--json and --store on every command."""
    return json_option(store_option(func))


def writer(func: Callable[..., Any]) -> Callable[..., Any]:
    """--json, --store and --author on every command that commits."""
    return common(author_option(func))


def open_store(
    store_path: str | None = None, author: str | None = None, actor: str = "cli"
) -> Store:
    from ..store import Store

    ctx = click.get_current_context(silent=True)
    root_store = None
    if ctx is not None:
        root = ctx.find_root()
        root_store = (root.obj or {}).get("store_path") if root.obj else None
    store = Store.discover(store_path or root_store, actor=actor, author=author)
    # The process ends after its command: a write's record files are indexed by the next
    # command's check, which runs anyway, rather than by this one (Whoosh's import and commit)
    store.workspace.index_on_write = False
    as_json = bool(ctx is not None and ctx.params.get("as_json"))
    store.progress = lambda total, what: progress_bar(total, what, as_json=as_json)
    if not as_json and store.workspace.create_on_write and sys.stderr.isatty():
        _say_the_default_store_answers(store)
    return store


def _say_the_default_store_answers(store: Store) -> None:
    """Where no store was named and none encloses the current folder, the default store
    answers; a person at a terminal is told so when it would surprise them: before the
    default store exists (the first write creates it), and inside a git repository that is
    not a store (they may think they are in one)."""
    from . import render

    if not store.exists:
        render.note(
            f"no store here; using the default store {store.root}, which the first write "
            "creates (lantern init makes a store in this folder)"
        )
        return
    repository = _enclosing_repository(os.getcwd())
    if repository is not None:
        render.note(
            f"{repository} is a git repository but not a lantern store; answering from the "
            f"default store {store.root} (lantern init {repository} makes it one)"
        )


def _enclosing_repository(start: str) -> str | None:
    """The nearest folder at or above ``start`` with a ``.git``, as git finds its repository."""
    current = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


class _Bar:
    """A click progress bar on stderr for one long index job."""

    def __init__(self, total: int, what: str):
        self._bar = click.progressbar(length=total, label=what, file=sys.stderr, width=30)
        self._bar.__enter__()

    def update(self, count: int) -> None:
        self._bar.update(count)

    def finish(self) -> None:
        self._bar.__exit__(None, None, None)


# An index job over fewer files is over before a bar would be read (~0.5 s at 2,000).
PROGRESS_FROM = 2000


def progress_bar(
    total: int, what: str, at_least: int = PROGRESS_FROM, *, as_json: bool = False
) -> _Bar | Lines:
    """A progress bar for a job over ``total`` files (``at_least`` of them, or it is over before
    the bar is read) where someone watches it: stderr is a terminal, and never with --json.
    Elsewhere (a pipe, --json) a job that runs past two seconds says how far it is in lines on
    stderr (``core/progress.py``). ``LANTERN_PROGRESS=always`` draws the bar, or says the lines,
    for a job of any size and length (so that a test can see them), ``never`` never."""
    from ..core.config import environment
    from ..core.progress import lines

    wanted = environment().progress
    if as_json or wanted == "never" or not sys.stderr.isatty():
        return lines(total, what)
    if wanted != "always" and total < at_least:
        return lines(total, what)
    return _Bar(total, what)


def embedding_progress(total: int, what: str) -> _Bar | Lines:
    """``lantern index embed``: a bar on a terminal (any size: the user asked for this job),
    else the index jobs' lines on stderr from the start (``core/progress.py``), however short
    the job; ``LANTERN_PROGRESS=never``: nothing."""
    from ..core.config import environment
    from ..core.progress import Lines

    if not what.startswith("embedding"):  # the index's own check, before: as everywhere
        return progress_bar(total, what)
    wanted = environment().progress
    if wanted == "never":
        return Lines(total, what, after=float("inf"))
    if sys.stderr.isatty():
        return _Bar(total, what)
    return Lines(total, what, after=0.0)


def read_content(content: str) -> str:
    """CONTENT as given, or stdin when it is ``-``."""
    if content == "-":
        from ..core.fields import MAX_CONTENT_BYTES

        # Bounded: a runaway pipe must not be read into memory before being refused.
        limit = 4 * MAX_CONTENT_BYTES
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise InvalidInput(
                f"content: is larger than the maximum record size ({MAX_CONTENT_BYTES} bytes)",
                code="invalid_field",
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InvalidInput(
                f"content: stdin is not valid UTF-8 (byte {err.start})", code="invalid_field"
            ) from None
    return content


def given_options(values: dict[str, object]) -> dict[str, object]:
    """The options of ``values`` that the user gave (on the command line or through the
    environment), not the defaults click filled in."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    given = {}
    for name, value in values.items():
        if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT):
            given[name] = value
    return given


def parse_time_option(value: str | None, name: str) -> int | None:
    """``--expires-at T`` for a new record (None when not given), as MCP's expires_at."""
    from ..core.fields import Unset
    from ..core.timespec import parse_expiry

    expiry = parse_expiry(value, name=name)
    return None if isinstance(expiry, Unset) else expiry


def add_options(defaults: bool = True) -> Callable[..., Any]:
    """The options a new record takes (add, supersede)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        options = [
            # No default=: since click 8.3 an explicit default=None counts as a value, so a
            # required --kind left out would pass None on instead of failing as a usage error.
            click.option(
                "--kind",
                required=defaults,
                metavar="KIND",
                help=f"One of: {', '.join(KINDS)}.",
            ),
            click.option(
                "--scope",
                default=DEFAULT_SCOPE if defaults else None,
                metavar="SCOPE",
                help="global, or namespace:name (user:ana, project:x).",
            ),
            click.option(
                "--priority",
                type=int,
                default=DEFAULT_PRIORITY if defaults else None,
                metavar="N",
                help="0-100.",
            ),
            click.option(
                "--urgency",
                type=int,
                default=DEFAULT_URGENCY if defaults else None,
                metavar="N",
                help="0-100.",
            ),
            click.option(
                "--confidence",
                type=float,
                default=DEFAULT_CONFIDENCE if defaults else None,
                metavar="F",
                help="0.0-1.0.",
            ),
            click.option(
                "--expires-at",
                default=None,
                metavar="T",
                help="Unix seconds, ISO 8601 (2026-12-31) or a duration (+2h, +7d).",
            ),
            click.option(
                "--source-ref",
                "source_refs",
                multiple=True,
                metavar="REF",
                help="Evidence (repeatable); a source:ID#La-Lb reference is checked and pinned.",
            ),
        ]
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The filters list and search share, named as ``RecordQuery.from_options`` takes them."""
    options = [
        click.option(
            "--scope",
            multiple=True,
            metavar="S",
            help="A scope; user:* matches a prefix. Repeatable.",
        ),
        click.option("--kind", multiple=True, metavar="K", help="A kind. Repeatable."),
        click.option(
            "--status",
            default=DEFAULT_STATUS,
            show_default=True,
            metavar="STATUS",
            help="active, archived, superseded or all.",
        ),
        click.option("--min-priority", type=int, default=None, metavar="N"),
        click.option("--min-urgency", type=int, default=None, metavar="N"),
        click.option(
            "--include-expired", is_flag=True, help="Also show records past their expires_at."
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return page_options(func)


mode_option = click.option(
    "--mode",
    type=click.Choice(SEARCH_MODES),
    default=None,
    help="keyword (BM25), semantic (embeddings) or hybrid (the two fused by the embedder's rule). "
    "Default: hybrid with the semantic extra, keyword without.",
)


explain_option = click.option(
    "--explain",
    is_flag=True,
    help="Show what made each hit's score: BM25 and the words matched, cosine, weights, floor.",
)


@overload
def page_options(func: Callable[..., Any], *, default: int | None = None) -> Callable[..., Any]: ...


@overload
def page_options(
    func: None = None, *, default: int | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...


def page_options(
    func: Callable[..., Any] | None = None, *, default: int | None = None
) -> Callable[..., Any]:
    """``--limit`` and ``--offset``: a page of any listing, given to the command as one
    ``page`` (a :class:`~lantern_git.core.paging.Page`, checked by the one paging rule: 0 is no
    limit, a negative value is a usage error). No ``--limit`` is ``default`` (None: no limit).
    Use as ``@page_options`` or ``@page_options(default=N)``."""
    import functools

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def command(*args: object, limit: int | None, offset: int, **kwargs: object) -> object:
            from ..core.paging import Page

            return func(*args, page=Page(limit, offset), **kwargs)

        command = click.option(
            "--offset", type=int, default=0, metavar="N", help="Skip the first N results."
        )(command)
        return click.option(
            "--limit",
            type=int,
            default=default,
            show_default=default is not None,
            metavar="N",
            help="At most N results (0: no limit).",
        )(command)

    return decorate if func is None else decorate(func)


def output_options(
    fields: tuple[str, ...], table: tuple[str, ...] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The output options of every listing command, as sqlite-utils' ``output_options``:
    ``--jsonl``, ``--csv``, ``--tsv`` beside ``--json`` and the table, ``--fields``,
    ``--count`` and ``--wide``. The command receives one ``output`` (a ``render.Output``)
    instead of the flags; ``fields`` are the names ``--fields`` may choose from, ``table``
    the table's default columns (default: a record's)."""
    import functools

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def command(
            *args: object,
            jsonl: bool,
            as_csv: bool,
            as_tsv: bool,
            chosen: str | None,
            count: bool,
            wide: bool,
            **kwargs: object,
        ) -> object:
            output = make_output(
                bool(kwargs["as_json"]), jsonl, as_csv, as_tsv, chosen, count, wide, fields
            )
            kwargs["output"] = output if table is None else output._replace(table=table)
            return func(*args, **kwargs)

        options = [
            click.option("--jsonl", is_flag=True, help="One JSON object per line."),
            click.option("--csv", "as_csv", is_flag=True, help="Comma-separated, with a header."),
            click.option("--tsv", "as_tsv", is_flag=True, help="Tab-separated, with a header."),
            click.option(
                "--fields",
                "chosen",
                metavar="A,B,C",
                default=None,
                help=f"Only these fields, in this order: {', '.join(fields)}.",
            ),
            click.option("--count", is_flag=True, help="Print only the number of results."),
            click.option(
                "--wide",
                "--no-trunc",
                "wide",
                is_flag=True,
                help="Show every cell whole (the table cuts long ones to fit the terminal).",
            ),
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def make_output(
    as_json: bool,
    jsonl: bool,
    as_csv: bool,
    as_tsv: bool,
    chosen: str | None,
    count: bool,
    wide: bool,
    allowed: tuple[str, ...],
) -> Output:
    from ..core.fields import choose_fields
    from . import render

    formats = [
        name
        for name, given in (("json", as_json), ("jsonl", jsonl), ("csv", as_csv), ("tsv", as_tsv))
        if given
    ]
    if len(formats) > 1:
        raise InvalidInput(
            "choose one output format: " + " and ".join(f"--{f}" for f in formats) + " were given",
            code="usage_error",
        )
    names = None
    if chosen is not None:
        names = choose_fields([n.strip() for n in chosen.split(",") if n.strip()], allowed)
    return render.Output(formats[0] if formats else "table", names, count, wide)


def meta_pairs(items: tuple[str, ...]) -> dict[str, str]:
    """``--meta KEY=VALUE`` options as a mapping; the first item without ``=`` is refused."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--meta {item!r}: expected KEY=VALUE", code="invalid_field")
        pairs[key] = value
    return pairs
