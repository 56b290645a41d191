"""Characters a person cannot see, made visible: the one rule every text surface uses (the
CLI's text output through ``cli/render.py``, every page of ``lantern serve`` through its
template environment).

A record whose content reads ``the prod database: <U+202E>on<U+202C>`` is displayed by a
terminal or a browser as "the prod database: no": the right-to-left override reverses what
follows it, so a reviewer approves the opposite of what is stored. Other control characters
(ESC, BEL, a C1 CSI) can recolour, hide or rewrite a terminal's line. Such text is shown with
each of those characters as ``<U+XXXX>``, and the record or change holding one is flagged.
JSON and the files keep the stored string unchanged: this is for display only.

Which characters: Unicode's own classes, not a hand list that drifts. Every character of
general category ``Cc`` (controls: C0, DEL, C1) or ``Cf`` (format: the bidi marks, embeddings,
overrides and isolates U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069; zero-width space
U+200B; word joiner U+2060; soft hyphen U+00AD; the BOM U+FEFF; the tag characters
U+E0000-U+E007F that can smuggle invisible ASCII to a model), except:

- tab and newline, which lay text out and are what they look like;
- U+200C ZERO WIDTH NON-JOINER and U+200D ZERO WIDTH JOINER: they shape letters (Persian,
  Indic scripts) and join emoji sequences, and never reorder or hide text, so showing them
  would garble ordinary writing and flag every family emoji.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

SHOWN_AS_THEY_ARE = frozenset("\t\n\u200c\u200d")
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf"})


def is_hidden(char: str) -> bool:
    """Whether one character is shown as ``<U+XXXX>`` (see the module's docstring)."""
    return char not in SHOWN_AS_THEY_ARE and unicodedata.category(char) in HIDDEN_CATEGORIES


_ASCII = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _hidden_of(text: str) -> set[str]:
    """The hidden characters ``text`` holds: each distinct character asked of ``unicodedata``
    once (a pattern of every hidden code point took 40 ms to build in each process)."""
    if text.isascii():
        return set(_ASCII.findall(text))
    return {char for char in set(text) if is_hidden(char)}


def _shown(char: str) -> str:
    return f"<U+{ord(char):04X}>"


def reveal(text: str) -> str:
    """``text`` with each hidden character written as ``<U+XXXX>`` (4 to 6 hex digits)."""
    if text.isascii():
        return _ASCII.sub(lambda m: _shown(m.group()), text)
    hidden = _hidden_of(text)
    return text.translate({ord(char): _shown(char) for char in hidden}) if hidden else text


def display_lines(text: str) -> list[str]:
    """``text``'s lines as a person reads them: split at newlines only (``\\r\\n`` counts as
    one), as sources number their lines. ``str.splitlines`` also splits at NEL, the line and
    paragraph separators and other controls, so such a character would vanish unshown and
    shift every line number after it."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def hidden_in(value: Any) -> list[str]:
    """The hidden characters a value holds (a string, or the strings of a record's
    ``to_dict``, a list or a dict, keys included), as sorted ``U+XXXX`` names."""
    found: set[str] = set()
    for text in _strings(value):
        found.update(_hidden_of(text))
    return [f"U+{ord(c):04X}" for c in sorted(found)]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item)
    elif hasattr(value, "to_dict"):
        yield from _strings(value.to_dict())
