"""``memory edit``: a record opened in the user's editor, validated, then committed.

The editor works on a temporary copy, never on the record file, so the record stays
byte-identical until a validated result is committed; an editor that crashes or a refused
edit leaves nothing behind in the store.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import InvalidInput, StoreError, ValidationError
from ..model.record import Record, one_line, split_front_matter
from ..model.record_file import record_path

if TYPE_CHECKING:
    from ..workspace.transaction import WriteTransaction

# A second front matter block in the body ("---" then "id: ...") is a second record.
_SECOND_RECORD = re.compile(
    r"^---[ \t]*\n(?:(?!---)[^\n]*\n){0,40}?id[ \t]*:[ \t]*['\"]?[0-9a-f]{16}\b", re.MULTILINE
)


def editor_command() -> list[str]:
    """``$VISUAL`` or ``$EDITOR``, split like a shell would; ``vi`` on a terminal otherwise."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                words = shlex.split(value)
            except ValueError as err:
                raise InvalidInput(f"${name}: cannot be split into words: {err}") from None
            if words:
                return words
    if sys.stdin.isatty() and shutil.which("vi"):
        return ["vi"]
    raise InvalidInput(
        "no editor: set $VISUAL or $EDITOR (for example EDITOR=nano)", code="no_editor"
    )


def run_editor(path: str, command: list[str] | None = None) -> None:
    """Run the editor on ``path`` and wait for it; no shell is involved."""
    words = command or editor_command()
    try:
        result = subprocess.run([*words, path], check=False)
    except OSError as err:
        raise StoreError(
            f"cannot run the editor {words[0]!r}: {err.strerror}", code="editor_failed"
        ) from None
    if result.returncode != 0:
        raise StoreError(
            f"the editor exited with status {result.returncode}; the record was not changed",
            code="editor_failed",
        )


def validate_edit(record_id: str, original: Record, text: str) -> Record:
    """The edited record, or a :class:`ValidationError` naming the field and line.

    The id cannot change (it would be another record), nor can one file hold two records.
    """
    path = record_path(record_id)
    record = Record.from_markdown(text, path)
    if record.id != record_id:
        raise ValidationError(
            f"id: cannot be changed (it is {record_id}; a different id is a different record: "
            "add or supersede instead)",
            field="id",
            path=path,
            line=_line_of(text, "id"),
            code="id_changed",
        )
    _, body, body_line = split_front_matter(text)
    match = _SECOND_RECORD.search(body)
    if match:
        raise ValidationError(
            "content: holds a second record's front matter; one file is one record "
            "(add the other with lantern memory add)",
            field="content",
            path=path,
            line=body_line + body[: match.start()].count("\n"),
            code="second_record",
        )
    return record


def _line_of(text: str, key: str) -> int | None:
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith(key + ":"):
            return number
    return None


def finish_edit(record: Record, original: Record, edited_text: str) -> str:
    """The text to commit: ``updated_at`` bumped when a field or the content changed."""
    if replace(original, updated_at=record.updated_at) == record:
        return edited_text
    bumped = record.evolve(updated_at=max(int(time.time()), original.updated_at))
    return bumped.rewrite(edited_text)


class EditSession:
    """One ``memory edit``: a temporary copy of the record for an editor to change.

    Made by :meth:`Store.begin_edit <lantern_git.store.Store.begin_edit>`: ``edit`` runs the
    editor (repeatable after a refused edit, keeping what was typed); ``commit`` validates and
    commits through ``apply``; ``close`` removes the copy.
    """

    def __init__(
        self,
        record_id: str,
        original_text: str,
        apply: Callable[[str, str, str, str | None], Record],
    ):
        self.record_id = record_id
        self.original_text = original_text
        self._apply = apply
        self._dir = tempfile.mkdtemp(prefix="lantern-edit-")
        self.path = os.path.join(self._dir, f"{self.record_id}.md")
        with open(self.path, "w", encoding="utf-8", newline="") as handle:
            handle.write(self.original_text)

    def __enter__(self) -> EditSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def edit(self, command: list[str] | None = None) -> None:
        run_editor(self.path, command)

    def edited_text(self) -> str:
        with open(self.path, "rb") as handle:
            data = handle.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            line = data[: err.start].count(b"\n") + 1
            raise ValidationError(
                "is not valid UTF-8", path=record_path(self.record_id), line=line
            ) from None

    def commit(self, *, reason: str | None = None) -> Record:
        """Validate the edited copy and commit it; unchanged text makes no commit."""
        return self._apply(self.record_id, self.original_text, self.edited_text(), reason)

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)


def apply_edit(
    tx: WriteTransaction, record_id: str, original_text: str, text: str, reason: str | None
) -> Record:
    """Commit ``text`` as the new file of ``record_id``, if it validates (Lantern-Op: edit).

    ``original_text`` is what the edit started from: if the file changed meanwhile, the edit
    is refused rather than silently overwriting the other change.
    """
    original = Record.from_markdown(original_text, record_path(record_id))
    record = validate_edit(record_id, original, text)
    if text == original_text:
        return original
    new_text = finish_edit(record, original, text)
    path = record_path(record_id)
    current_text, _ = tx.read(record_id)
    if current_text != original_text:
        raise StoreError(
            f"{path} changed while it was being edited; nothing was committed "
            "(run lantern memory edit again)",
            code="edit_conflict",
        )
    tx.ensure_committed(record_id, current_text)
    tx.commit(
        {path: new_text.encode("utf-8")},
        f"edit {record_id}: {one_line(record.content)}",
        "edit",
        (record_id,),
        reason=reason,
    )
    return Record.from_markdown(new_text, path)
