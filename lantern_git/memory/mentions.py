"""What an entity rename needs of the records: the record files that name the old key.

The entity part (:mod:`lantern_git.entities.entities`) imports no other part; the Store hands
it this (as its ``Mentions``), so that a rename rewrites, in its one commit, every record whose
``entities`` field names the key that moved or whose content links it as ``[[OLD]]``. Links by
name or alias (``[[Ana García]]``) are left as they are: the renamed entity keeps its name, and
its old key and name as aliases, so they still find it.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from ..errors import NotFound, StoreError, ValidationError
from ..model.record_file import expected_id, read_bytes, record_path, walk

if TYPE_CHECKING:
    from ..workspace.transaction import WriteTransaction


class RecordMentions:
    """The records' side of an entity rename (see the module's docstring)."""

    def renamed(
        self, tx: WriteTransaction, old: str, new: str
    ) -> tuple[dict[str, bytes], list[str]]:
        """(path -> new bytes, ids) of the records, as ``tx`` sees them (a review branch's
        pending version first), rewritten to name ``new`` where they named ``old``. A record
        with an uncommitted hand edit is refused, as every writer refuses it."""
        link = re.compile(r"\[\[\s*" + re.escape(old) + r"\s*\]\]", re.IGNORECASE)
        needle = old.encode("utf-8")
        ids = {i for path in walk(tx.root) if (i := expected_id(path)) is not None}
        ids |= {i for path in tx.pending() if (i := expected_id(path)) is not None}
        files: dict[str, bytes] = {}
        changed: list[str] = []
        now = int(time.time())
        for record_id in sorted(ids):
            path = record_path(record_id)
            if path not in tx.pending():
                # Most records never name the key: skip them without parsing.
                data, _ = read_bytes(tx.root, path)
                if data is None or needle not in data.lower():
                    continue
            try:
                text, record = tx.read(record_id)
            except (ValidationError, NotFound, StoreError):
                continue  # unreadable or removed: lantern check reports it
            content = link.sub(f"[[{new}]]", record.content)
            if old not in record.entities and content == record.content:
                continue
            tx.ensure_committed(record_id, text)
            entities = tuple(dict.fromkeys(new if key == old else key for key in record.entities))
            rewritten = record.evolve(
                entities=entities, content=content, updated_at=max(now, record.updated_at)
            )
            files[path] = rewritten.rewrite(text).encode("utf-8")
            changed.append(record_id)
        return files, changed
