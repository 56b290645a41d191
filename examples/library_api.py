"""The Python library: what the CLI and the MCP server are thin layers over.

Run it with ``python examples/library_api.py``; it works in a temporary store and removes it.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from lantern_git import AmbiguousId, InvalidInput, NotFound, Store


def show(title: str, records) -> None:
    print(f"\n{title}")
    for record in records:
        # Search returns hits (a record and its keyword score); list returns records.
        score = f"{record.score:6.2f}  " if hasattr(record, "score") else ""
        record = getattr(record, "record", record)
        print(
            f"  {score}{record.id[:7]}  {record.kind:<11} {record.scope:<18} "
            f"p{record.priority:<3} u{record.urgency:<3} {record.status:<10} {record.content}"
        )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # init creates the git repository and the store (or adopts an existing repository).
        store = Store.init(str(Path(tmp) / "memory"), actor="api")
        try:
            run(store)
        finally:
            store.close()


def run(store: Store) -> None:
    pref = store.add(
        "Raphael prefers separate branches on his repos.",
        kind="preference",
        scope="user:raphael",
        priority=90,
    )
    deploy = store.add(
        "Deploys go through Jenkins.", kind="fact", scope="project:lantern", priority=60
    )
    store.add(
        "Standup: the search index rebuild takes 2s on 10k records.",
        kind="observation",
        scope="project:lantern",
        source_refs=["session:42"],
        reason="from the standup transcript",
    )
    store.add(
        "Renew the TLS certificate on zettabyte.",
        kind="task_state",
        scope="host:zettabyte",
        urgency=80,
        expires_at=4_000_000_000,
    )

    # Ids are deterministic: the same kind, scope and content is the same record, and adding
    # it again returns it without a new commit.
    # store.written(...) runs a write and says what happened: its value and the commit it made.
    again = store.written(
        store.add, "Deploys go through Jenkins.", kind="fact", scope="project:lantern"
    )
    assert again.value.id == deploy.id and again.commit is None

    show("All active records (active, priority, urgency, newest, id):", store.list())
    show("Scope prefix and a minimum priority:", store.list(scopes=("project:*",), min_priority=40))
    show("Kinds, and a limit:", store.list(kinds=("fact", "task_state"), limit=1))
    show("Keyword search, with scores:", store.search("deploys jenkins"))

    # Supersede: the new record points at the old one; both change in one commit.
    new = store.supersede(deploy.id[:6], "Deploys go through GitHub Actions.", reason="moved CI")
    assert new.supersedes_id == deploy.id
    assert store.get(deploy.id).status == "superseded"

    # Archive is a status edit: the record stays (only store.delete removes one).
    store.archive(pref.id, reason="moved to a monorepo")
    show("Everything, archived and superseded included:", store.list(status="all"))

    updated = store.update(new.id, urgency=30, add_source_refs=["commit:abc1234"])
    print(
        f"\nupdated {updated.id[:7]}: urgency {updated.urgency}, refs {list(updated.source_refs)}"
    )

    # Evidence: a transcript stored verbatim, searched by chunk, cited by line and verified.
    from lantern_git.evidence.sources import SourceInput

    [chat] = store.sources.add(
        [
            SourceInput(
                b"User: which branch model do you like?\nRaphael: separate branches, always.\n",
                uri="session:2026-12-03",
                kind="transcript",
                title="branch chat",
            )
        ]
    )
    [hit] = store.sources.search("separate branches")
    cited = store.update(pref.id, add_source_refs=[hit.ref])
    store.sources.append(chat.manifest.id, "Raphael: and short commit messages.\n")
    report = store.sources.verify()
    print(f"\ncited {cited.source_refs[-1]}; verify ok={report.ok}, checked {report.checked}")
    print(store.sources.show(hit.ref).text, end="")

    # Errors are typed, carry a code, and map to the CLI's exit codes.
    for attempt in (
        lambda: store.get("0123456789abcdef"),
        lambda: store.add("x", kind="opinion"),
        lambda: store.get("abc"),
    ):
        try:
            attempt()
        except (NotFound, AmbiguousId, InvalidInput) as err:
            print(f"{type(err).__name__} ({err.code}, exit {err.exit_code}): {err.message}")

    # Every write was a git commit with provenance trailers.
    log = subprocess.run(
        ["git", "log", "--format=%h %s"],
        cwd=store.root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    print("\ngit log:\n" + log)


if __name__ == "__main__":
    main()
