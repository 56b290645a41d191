"""Source-aware three-way merge: (base, ours, theirs) versions of one source -> one source.

A source is two files, its verbatim body and its manifest (docs/evidence.md); this merges the pair,
never with conflict markers, and symmetrically: swapping ours and theirs gives the same bytes.
The rules (docs/sync.md, "How sources merge"):

**Bodies** (:func:`merge_bodies`) are decided from the bodies alone, so the git merge driver,
which sees one file at a time, decides a body exactly as ``lantern sync`` does. ``None`` is an
absent body (the source removed, or added on one side only).

1. Both sides the same: it. Only one side differs from the base: that side.
2. Removed on one side, changed on the other: the changed body (``kept``).
3. A body that is not text (not UTF-8, or holding a NUL byte) is replaced by the other side's;
   when neither side is text, :class:`~lantern_git.model.record_merge.MergeError`.
4. *Appended on both sides*: the base body is not empty and each side's body starts with it.
   Whole lines both tails begin with are kept once (two hosts ingested the same growing
   transcript), then: when one remaining tail is a prefix of the other, the longer alone (no
   text is ever doubled); otherwise both, the smaller (by bytes) first, with one ``\\n``
   inserted after it when it does not end with one, so the two tails never glue into one
   line. The result starts with the base byte for byte: every base line keeps its number.
5. Otherwise, when one body is a prefix of the other (an add on both hosts where one had
   more of the text, or a re-ingest that only grew): the longer.
6. Otherwise two different re-ingests (or two different adds): the longer body stays current,
   on a tie the one whose sha256 is larger; the other is returned as ``other`` for the merge
   commit to list (its blob stays reachable in the other parent).

An empty base body counts as no base (the git driver cannot tell the two apart: for a file
added on both sides git passes an empty base).

**Manifests** (:func:`merge_source`, :func:`merge_manifest_files`): ``lines``, ``bytes`` and
``sha256`` describe the merged body; ``captured_at`` is the earlier of the two sides and
``updated_at`` the later. ``kind``, ``uri``, ``title``, ``media_type``, each ``meta`` key, each
key lantern does not know (and the body's file extension) merge three-way: one side's change
is taken, equal changes merge silently, and a value both sides changed differently (listed in
``conflicts``) comes from the side whose body won a two-sided body change (rules 5 and 6);
when no body won, from the side whose ``updated_at`` is later; on a tie, the larger value
(absent < text, then by code point). A manifest that does not parse (or names another id) is
replaced by the other side's fields, as :mod:`lantern_git.model.record_merge` does for records, its
derived fields still computed from the merged body; when neither side's manifest parses,
MergeError and nothing is written. A missing or invalid base manifest counts as empty. The
merged manifest keeps a side's own bytes when it equals that side (hand formatting survives).

Pure: no git, no files. Imports only the source model (PyYAML), so the git driver starts fast.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import ValidationError
from .record_merge import MergeError
from .source import SourceManifest, check_body
from .source_file import describe

OURS = "ours"
THEIRS = "theirs"
DERIVED = ("lines", "bytes", "sha256")
# Fields merged three-way; the derived ones, the two timestamps and id follow their own rules.
THREE_WAY = ("kind", "uri", "title", "media_type")
# Two appended tails are compared this many bytes at a time (a speed-up only)
COMPARE_BLOCK = 4096


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


# ---------------------------------------------------------------------------- bodies


@dataclass(frozen=True)
class BodyMerge:
    """The merged body, and how it was decided.

    ``how``: same, ours, theirs, removed, kept, appended, longer, reingested, invalid.
    ``winner``: the side whose body was kept over a *different change* of the other side
    (rules 3, 5, 6); None when no side won over the other. ``other``: the body a re-ingest
    left behind (rule 6).
    """

    body: bytes | None
    how: str
    winner: str | None = None
    other: bytes | None = None


def _is_text(body: bytes) -> bool:
    try:
        check_body(body)
    except ValidationError:
        return False
    return True


def merge_bodies(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> BodyMerge:
    """Merge two versions of a source's body against their common ancestor (rules above)."""
    base = base or None
    if ours == theirs:
        return BodyMerge(ours, "same")
    if ours == base:
        return BodyMerge(theirs, THEIRS if theirs is not None else "removed")
    if theirs == base:
        return BodyMerge(ours, OURS if ours is not None else "removed")
    if ours is None or theirs is None:
        return BodyMerge(theirs if ours is None else ours, "kept")
    ours_ok, theirs_ok = _is_text(ours), _is_text(theirs)
    if not (ours_ok or theirs_ok):
        raise MergeError("cannot merge: neither side's body is text")
    if not (ours_ok and theirs_ok):
        return BodyMerge(*((ours, "invalid", OURS) if ours_ok else (theirs, "invalid", THEIRS)))
    if base and _is_text(base) and ours.startswith(base) and theirs.startswith(base):
        return BodyMerge(_append(base, ours[len(base) :], theirs[len(base) :]), "appended")
    if ours.startswith(theirs) or theirs.startswith(ours):
        return _pick(ours, theirs, "longer")
    return _pick(ours, theirs, "reingested")


def _append(base: bytes, ours_tail: bytes, theirs_tail: bytes) -> bytes:
    shared = _shared_lines(ours_tail, theirs_tail)
    head, a, b = base + ours_tail[:shared], ours_tail[shared:], theirs_tail[shared:]
    if a.startswith(b) or b.startswith(a):
        return head + max(a, b, key=len)
    first, second = sorted((a, b))
    return head + first + (b"" if first.endswith(b"\n") else b"\n") + second


def _shared_lines(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` that ends at a newline. ``a``
    and ``b`` differ (two sides' tails after one base: equal sides merged as ``same``), so
    some block of them differs and the first loop ends."""
    n = 0
    # Whole blocks compare at C speed (tails of a large ingest can be megabytes); then byte by
    # byte within the first block that differs (zip stops where the shorter one ends).
    while a[n : n + COMPARE_BLOCK] == b[n : n + COMPARE_BLOCK]:
        n += COMPARE_BLOCK
    for x, y in zip(a[n : n + COMPARE_BLOCK], b[n : n + COMPARE_BLOCK]):
        if x != y:
            break
        n += 1
    return a.rfind(b"\n", 0, n) + 1


def _pick(ours: bytes, theirs: bytes, how: str) -> BodyMerge:
    def key(body: bytes) -> tuple[int, str]:
        return len(body), hashlib.sha256(body).hexdigest()

    if key(ours) > key(theirs):
        return BodyMerge(ours, how, OURS, theirs if how == "reingested" else None)
    return BodyMerge(theirs, how, THEIRS, ours if how == "reingested" else None)


# ---------------------------------------------------------------------------- manifests


@dataclass(frozen=True)
class SourceVersion:
    """One side of a source: its manifest's bytes, its body's bytes and the body's file
    extension; all None where that side has no such source."""

    manifest: bytes | None = None
    body: bytes | None = None
    ext: str | None = None

    @property
    def present(self) -> bool:
        return self.manifest is not None or self.body is not None


@dataclass(frozen=True)
class SourceMerge:
    """The merged source (all None: removed) and what the merge decided.

    ``conflicts``: manifest fields both sides changed differently. ``invalid``: the sides whose
    manifest was replaced. ``kept``: the side whose change was kept over the other's removal.
    """

    manifest: bytes | None
    body: bytes | None
    ext: str | None
    body_merge: BodyMerge
    conflicts: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()
    kept: str | None = None


def parse_manifest_side(data: bytes | None, source_id: str | None) -> SourceManifest | None:
    """A side's manifest, or None when it is absent, empty, invalid, or names another id."""
    if data is None or not data.strip():
        return None
    try:
        manifest = SourceManifest.from_yaml(data)
    except ValidationError:
        return None
    if source_id is not None and manifest.id != source_id:
        return None
    return manifest


def merge_source(
    base: SourceVersion,
    ours: SourceVersion,
    theirs: SourceVersion,
    source_id: str | None = None,
) -> SourceMerge:
    """Merge two versions of one source (manifest and body together) against their ancestor.

    ``source_id`` pins the id every manifest must carry. Raises MergeError when there is
    nothing sound to write (neither body is text, or neither manifest parses).
    """
    if not ours.present or not theirs.present:
        if not ours.present and not theirs.present:
            return SourceMerge(None, None, None, BodyMerge(None, "removed"))
        changed = theirs if not ours.present else ours
        if changed == base:
            return SourceMerge(None, None, None, BodyMerge(None, "removed"))
        # Removed on one side, changed on the other: the change is kept as it is, unparsed.
        side = THEIRS if not ours.present else OURS
        return SourceMerge(
            changed.manifest, changed.body, changed.ext, BodyMerge(changed.body, "kept"), kept=side
        )
    # A side that lost only its body file contributes no body: the other side's stands in.
    if ours.body is None and theirs.body is None:
        raise MergeError("cannot merge: neither side has a body file")
    if ours.body is None:
        ours = SourceVersion(ours.manifest, theirs.body, theirs.ext)
    elif theirs.body is None:
        theirs = SourceVersion(theirs.manifest, ours.body, ours.ext)
    body = merge_bodies(base.body, ours.body, theirs.body)
    assert body.body is not None
    parsed = [parse_manifest_side(v.manifest, source_id) for v in (base, ours, theirs)]
    fields = _merge_manifest(parsed[0], parsed[1], parsed[2], describe(body.body), body.winner)
    texts = {OURS: ours.manifest, THEIRS: theirs.manifest}
    ext = _decide_ext(base, ours, theirs, parsed, body.winner)
    return SourceMerge(
        _render(fields.manifest, parsed[1], parsed[2], texts),
        body.body,
        ext,
        body,
        fields.conflicts,
        fields.invalid,
    )


def merge_manifest_files(
    base: bytes | None,
    ours: bytes | None,
    theirs: bytes | None,
    source_id: str | None,
    find_body: Callable[[SourceManifest], bytes | None],
) -> bytes:
    """The merged manifest, for the git merge driver, which sees the manifest alone.

    When the two sides' bodies differ from each other and from the base, the merged body's
    lines, bytes and sha256 need the bodies: ``find_body(manifest)`` returns the body a
    manifest describes (the driver looks it up in the repository); a body whose sha256 is not
    the manifest's is not used. The bodies merge by :func:`merge_bodies`, as the driver does
    for the body file, so the manifest describes the body git writes beside it. MergeError
    when a needed body cannot be found, or a side's manifest does not parse (its body cannot be
    looked up): the driver then leaves the file to the user, without markers.
    """
    b, o, t = (parse_manifest_side(d, source_id) for d in (base, ours, theirs))
    if o is None or t is None:
        raise MergeError("cannot merge: a side's manifest does not parse; use lantern sync")
    winner: str | None = None
    if o.sha256 == t.sha256:
        derived = _derived_of(o)
    elif b is not None and b.bytes and b.sha256 == o.sha256:
        derived = _derived_of(t)
    elif b is not None and b.bytes and b.sha256 == t.sha256:
        derived = _derived_of(o)
    else:
        if b is None and base is not None and base.strip():
            # The body driver merges against the base body, which only its manifest names.
            raise MergeError("cannot merge: the base manifest does not parse; use lantern sync")
        ours_body, theirs_body = _verified(find_body, o), _verified(find_body, t)
        base_body = None
        if b is not None:
            prefix = ours_body[: b.bytes] if ours_body is not None else None
            if prefix is not None and hashlib.sha256(prefix).hexdigest() == b.sha256:
                base_body = prefix
            else:
                base_body = _verified(find_body, b)
        if ours_body is None or theirs_body is None or (b is not None and base_body is None):
            raise MergeError(
                "cannot merge: a body this manifest describes is not in the repository"
            )
        merged = merge_bodies(base_body, ours_body, theirs_body)
        assert merged.body is not None
        derived, winner = describe(merged.body), merged.winner
    fields = _merge_manifest(b, o, t, derived, winner)
    return _render(fields.manifest, o, t, {OURS: ours, THEIRS: theirs})


def _verified(
    find_body: Callable[[SourceManifest], bytes | None], manifest: SourceManifest
) -> bytes | None:
    body = find_body(manifest)
    if body is None or hashlib.sha256(body).hexdigest() != manifest.sha256:
        return None
    return body


def _derived_of(manifest: SourceManifest) -> dict[str, Any]:
    return {name: getattr(manifest, name) for name in DERIVED}


@dataclass(frozen=True)
class _Fields:
    manifest: SourceManifest
    conflicts: tuple[str, ...]
    invalid: tuple[str, ...]


def _merge_manifest(
    base: SourceManifest | None,
    ours: SourceManifest | None,
    theirs: SourceManifest | None,
    derived: dict[str, Any],
    winner: str | None,
) -> _Fields:
    if ours is None and theirs is None:
        raise MergeError("cannot merge: neither side's manifest parses; fix it by hand")
    if ours is None or theirs is None:
        valid = theirs if ours is None else ours
        assert valid is not None
        invalid = OURS if ours is None else THEIRS
        return _Fields(valid.evolve(**derived), (), (invalid,))
    chooser = _Chooser(winner, ours.updated_at, theirs.updated_at)
    values: dict[str, Any] = {}
    for name in THREE_WAY:
        bv = getattr(base, name) if base is not None else MISSING
        values[name] = chooser.three_way(name, bv, getattr(ours, name), getattr(theirs, name))
    values["meta"] = chooser.mapping(
        "meta", base.meta if base is not None else {}, ours.meta, theirs.meta
    )
    extra = chooser.mapping("", base.extra if base is not None else {}, ours.extra, theirs.extra)
    merged = SourceManifest(
        id=ours.id,
        captured_at=min(ours.captured_at, theirs.captured_at),
        updated_at=max(ours.updated_at, theirs.updated_at),
        extra=extra,
        **values,
        **derived,
    )
    try:
        SourceManifest.from_yaml(merged.to_yaml())
    except ValidationError:
        # Every value came from a valid side; a union past a limit (64 meta keys) is the one
        # way out. The deciding side as a whole is still a valid, deterministic answer.
        side = chooser.choose("", MISSING, ours, theirs, key=lambda m: m.to_yaml())
        merged = side.evolve(
            captured_at=merged.captured_at, updated_at=merged.updated_at, **derived
        )
    return _Fields(merged, tuple(chooser.conflicts), ())


_V = TypeVar("_V")


class _Chooser:
    """Three-way choice of values, symmetric in ours and theirs, recording two-sided changes."""

    def __init__(self, winner: str | None, ours_at: int, theirs_at: int):
        self.winner = winner
        self.ours_at = ours_at
        self.theirs_at = theirs_at
        self.conflicts: list[str] = []

    def three_way(self, name: str, base: object, ours: _V, theirs: _V) -> _V:
        if ours == theirs:
            return ours
        if ours == base:
            return theirs
        if theirs == base:
            return ours
        return self.choose(name, base, ours, theirs)

    def choose(
        self, name: str, base: object, ours: _V, theirs: _V, key: Callable[[_V], Any] | None = None
    ) -> _V:
        if name:
            self.conflicts.append(name)
        if self.winner is not None:
            return ours if self.winner == OURS else theirs
        if self.ours_at != self.theirs_at:
            return ours if self.ours_at > self.theirs_at else theirs
        return max(ours, theirs, key=key or _order)

    def mapping(
        self, name: str, base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]
    ) -> dict[str, Any]:
        """Key by key: the base's keys in its order, then new keys sorted by name."""
        keys = [*base, *sorted({*ours, *theirs} - set(base))]
        merged: dict[str, Any] = {}
        for key in keys:
            label = f"{name}.{key}" if name else key
            value = self.three_way(
                label, base.get(key, MISSING), ours.get(key, MISSING), theirs.get(key, MISSING)
            )
            if value is not MISSING:
                merged[key] = value
        return merged


def _order(value: Any) -> tuple[int, str]:
    """A total order over values: absent < text < anything else (by its YAML text)."""
    if value is MISSING or value is None:
        return (0, "")
    if isinstance(value, str):
        return (1, value)
    import yaml

    return (2, yaml.safe_dump(value, sort_keys=True, allow_unicode=True, width=1 << 30))


def _decide_ext(
    base: SourceVersion,
    ours: SourceVersion,
    theirs: SourceVersion,
    parsed: list[SourceManifest | None],
    winner: str | None,
) -> str | None:
    o, t = parsed[1], parsed[2]
    chooser = _Chooser(
        winner, o.updated_at if o is not None else 0, t.updated_at if t is not None else 0
    )
    bv = base.ext if base.present else MISSING
    return chooser.three_way("", bv, ours.ext, theirs.ext)


def _render(
    merged: SourceManifest,
    ours: SourceManifest | None,
    theirs: SourceManifest | None,
    texts: dict[str, bytes | None],
) -> bytes:
    """A side's own bytes when the merge equals that side (the larger, when both do, so the
    choice is symmetric), else the canonical YAML."""
    candidates = sorted(
        text
        for side, parsed in ((OURS, ours), (THEIRS, theirs))
        if parsed == merged and (text := texts[side]) is not None
    )
    return candidates[-1] if candidates else merged.to_yaml()
