"""What an entity rename needs of the records: the record files that name the old key.

The entity part (:mod:`lantern_git.entities.entities`) imports no other part; the Store hands
it this (as its ``Mentions``), so that a rename rewrites, in its one commit, every record whose
``entities`` field or ``[[link]]`` names the key that moved.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..workspace.transaction import WriteTransaction


class RecordMentions:
    """The records' side of an entity rename (see the module's docstring)."""

    def renamed(
        self, tx: WriteTransaction, old: str, labels: Iterable[str], new: str
    ) -> tuple[dict[str, bytes], list[str]]:
        """(path -> new bytes, ids) of the records that name ``old``: none until records
        name entities."""
        return {}, []
