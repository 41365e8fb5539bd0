"""Feature flags (spec 001 "Feature Flags"; FACTS §A "Feature flags observed").

``Manifest.reader_feature_flags`` (9) and ``writer_feature_flags`` (10) are bitmaps of the
features a reader or writer must know. "If either sees a flag they don't know, they should
return an 'unsupported' error on any read or write operation."

==  =========================  ===============================================
 1  DELETION_FILES             some fragment has a deletion file
 2  STABLE_ROW_IDS             move-stable row ids (row id sequences)
 4  USE_V2_FORMAT_DEPRECATED   old marker of v2 data files
 8  TABLE_CONFIG               the manifest has table config (writer only)
16  BASE_PATHS                 files may live under other base paths
32  TRANSACTION_FILES_DISABLED upstream source only; no ``.txn`` files
64  DATA_OVERLAYS              observed: pylance 14.0.2 sets it (both kinds) when a
                               ``DataOverlay`` commit gives a fragment overlay files
                               (``DataFragment`` field 11); not read here
==  =========================  ===============================================

A reader knows every flag below 64. Flag 64 keeps its name in refusals: pylance 14.0.2 writes
it and refuses its own table too ("This dataset cannot be read by this version of Lance ...
Flags: 64").
"""

from __future__ import annotations

from ..errors import UnsupportedFeature

DELETION_FILES = 1
STABLE_ROW_IDS = 2
USE_V2_FORMAT_DEPRECATED = 4
TABLE_CONFIG = 8
BASE_PATHS = 16
TRANSACTION_FILES_DISABLED = 32
DATA_OVERLAYS = 64  # observed (pylance 14.0.2's DataOverlay); unknown to this reader

FLAG_NAMES = {
    DELETION_FILES: "DELETION_FILES",
    STABLE_ROW_IDS: "STABLE_ROW_IDS",
    USE_V2_FORMAT_DEPRECATED: "USE_V2_FORMAT_DEPRECATED",
    TABLE_CONFIG: "TABLE_CONFIG",
    BASE_PATHS: "BASE_PATHS",
    TRANSACTION_FILES_DISABLED: "TRANSACTION_FILES_DISABLED",
    DATA_OVERLAYS: "DATA_OVERLAYS (data overlay files: pylance 14.0.2's DataOverlay)",
}
KNOWN_READER_FLAGS = 63
KNOWN_WRITER_FLAGS = 63


def flag_names(bits: int) -> list[str]:
    """Names of the set bits, lowest first; unknown bits appear as ``"UNKNOWN(2**k)"``."""
    names = []
    bit = 1
    while bits >= bit:
        if bits & bit:
            names.append(FLAG_NAMES.get(bit, f"UNKNOWN({bit})"))
        bit <<= 1
    return names


def _check(bits: int, known: int, kind: str, path: str | None) -> None:
    unknown = bits & ~known
    if unknown:
        names = ", ".join(n for n in flag_names(unknown))
        raise UnsupportedFeature(
            f"{kind} feature flags {unknown} not supported: {names}", rule="FLAGS-001", path=path)


def check_reader_flags(manifest, path: str | None = None) -> None:
    """Raise UnsupportedFeature when ``manifest`` has a reader flag this reader does not know."""
    _check(manifest.reader_feature_flags, KNOWN_READER_FLAGS, "reader", path)


def check_writer_flags(manifest, path: str | None = None) -> None:
    """Raise UnsupportedFeature when ``manifest`` has a writer flag this writer does not know."""
    _check(manifest.writer_feature_flags, KNOWN_WRITER_FLAGS, "writer", path)


def uses_stable_row_ids(manifest) -> bool:
    """True when some fragment carries a row id sequence or the row-id counter has moved."""
    if manifest.next_row_id > 0:
        return True
    return any(f.WhichOneof("row_id_sequence") is not None for f in manifest.fragments)


def reads_stable_row_ids(manifest) -> bool:
    """True when a reader takes the version's row ids from row id sequences: reader flag 2
    is set, or some fragment carries a sequence (a missing flag is FLAGS-004's to report).

    A moved ``next_row_id`` alone does not say so: spec 004 uses it "only if the
    stable_row_ids feature flag is set". pylance 1.0.4 leaves it moved when a commit drops
    the flag (a table emptied by deletes, then appended to: flags 0, next_row_id 3360,
    fragments without sequences), and it and 14.0.2 read that version's row ids as row
    addresses."""
    if manifest.reader_feature_flags & STABLE_ROW_IDS:
        return True
    return any(f.WhichOneof("row_id_sequence") is not None for f in manifest.fragments)


def expected_flags(manifest) -> tuple[int, int]:
    """``(reader, writer)`` flags pylance 14 would write for the contents of ``manifest``.

    Deletion files give 1, base paths 16 (both sides), table config 8 (writer only). Stable
    row ids (2) show in the contents only once rows exist (a row id sequence or a moved
    ``next_row_id``); for an empty table that has them the manifest's own bit is kept.
    """
    reader = writer = 0
    if any(f.HasField("deletion_file") for f in manifest.fragments):
        reader |= DELETION_FILES
        writer |= DELETION_FILES
    if uses_stable_row_ids(manifest) or manifest.reader_feature_flags & STABLE_ROW_IDS:
        reader |= STABLE_ROW_IDS
        writer |= STABLE_ROW_IDS
    if len(manifest.config):
        writer |= TABLE_CONFIG
    if len(manifest.base_paths):
        reader |= BASE_PATHS
        writer |= BASE_PATHS
    return reader, writer
