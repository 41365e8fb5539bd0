"""FLAGS-*: reader and writer feature flags (spec 004 ``Manifest`` fields 9 and 10).

Known flags: 1 deletion files present, 2 stable row ids, 4 v2 format (deprecated),
8 table config present, 16 base paths (FACTS; pylance 14.0.2 sets it for shallow clones
and branches), 32 transaction files disabled (upstream source). A reader accepts flags
below 64. A flag set means "a reader or writer must know this feature"; the contents of
the manifest decide which flags must be set. pylance 14.0.2 sets 8 in the writer flags
only, so config is checked against the writer flags only.
"""

from __future__ import annotations

from .registry import Finding, rule

KNOWN_FLAGS = 1 | 2 | 4 | 8 | 16 | 32
_SEC = "Feature Flags"
_FACTS_SEC = "Feature flags observed"


def uses_deletions(m) -> bool:
    return any(f.HasField("deletion_file") for f in m.fragments)


def uses_stable_row_ids(m) -> bool:
    return any(f.WhichOneof("row_id_sequence") for f in m.fragments)


def _used(ctx) -> tuple[bool, bool]:
    """(deletion files used, stable row ids used) by ``ctx``'s version: from the engine's
    fragment aggregates when it has them, else from the fragments."""
    stats = ctx.fragment_stats
    if stats is not None:
        return stats.deletions > 0, stats.with_row_ids > 0
    return uses_deletions(ctx.manifest), uses_stable_row_ids(ctx.manifest)


def expected_flags(m, used: tuple[bool, bool] | None = None) -> tuple[int, int]:
    """(reader, writer) flags the manifest's contents require; ``used`` gives
    :func:`_used`'s answer when it is known already."""
    deletions, row_ids = used if used is not None else (uses_deletions(m),
                                                        uses_stable_row_ids(m))
    reader = writer = 0
    if deletions:
        reader |= 1
        writer |= 1
    if row_ids:
        reader |= 2
        writer |= 2
    if len(m.config):
        writer |= 8
    if len(m.base_paths):
        reader |= 16
        writer |= 16
    return reader, writer


@rule("FLAGS-001", title="no unknown reader feature flag", severity="error", spec="001",
      section=_SEC,
      clause="Readers should check the reader_feature_flags to see if there are any flag it "
             "is not aware of. ... If either sees a flag they don't know, they should return "
             "an \u201cunsupported\u201d error on any read or write operation.",
      pylance="pylance 14.0.2 opens, reads and validates a dataset with reader flag 128 set "
              "without complaint (it refuses writer flag 256 alone as 'only one of the mixed "
              "data-file-version reader and writer feature bits')", enforces="spec")
def unknown_reader_flags(ctx):
    extra = int(ctx.manifest.reader_feature_flags) & ~KNOWN_FLAGS
    if extra:
        yield Finding(f"reader_feature_flags has unknown bits {extra:#x} "
                      f"(flags {ctx.manifest.reader_feature_flags})", {"path": ctx.manifest_key})


@rule("FLAGS-002", title="no unknown writer feature flag", severity="error", spec="001",
      section=_SEC,
      clause="Writers should check writer_feature_flags. If either sees a flag they don't "
             "know, they should return an \u201cunsupported\u201d error")
def unknown_writer_flags(ctx):
    extra = int(ctx.manifest.writer_feature_flags) & ~KNOWN_FLAGS
    if extra:
        yield Finding(f"writer_feature_flags has unknown bits {extra:#x} "
                      f"(flags {ctx.manifest.writer_feature_flags})", {"path": ctx.manifest_key})


def _missing(ctx, bit: int, what: str, reader: bool = True):
    m = ctx.manifest
    if reader and not int(m.reader_feature_flags) & bit:
        yield Finding(f"{what} but reader flag {bit} is not set", {"path": ctx.manifest_key})
    if not int(m.writer_feature_flags) & bit:
        yield Finding(f"{what} but writer flag {bit} is not set", {"path": ctx.manifest_key})


@rule("FLAGS-003", title="deletion files imply flag 1", severity="error", spec="004",
      section="Manifest", clause="Known flags: * 1: deletion files are present")
def deletion_flag(ctx):
    if _used(ctx)[0]:
        yield from _missing(ctx, 1, "a fragment has a deletion file")


@rule("FLAGS-004", title="stable row ids imply flag 2", severity="error", spec="004",
      section="Manifest",
      clause="* 2: row ids are stable and stored as part of the fragment metadata.")
def row_id_flag(ctx):
    if _used(ctx)[1]:
        yield from _missing(ctx, 2, "a fragment stores a row id sequence")


@rule("FLAGS-005", title="table config implies writer flag 8", severity="error", spec="004",
      section="Manifest", clause="* 8: table config is present",
      pylance="pylance 14.0.2 sets 8 in writer_feature_flags only (reader flags stay 0)",
      enforces="pylance")
def config_flag(ctx):
    if len(ctx.manifest.config):
        yield from _missing(ctx, 8, "Manifest.config is not empty", reader=False)


@rule("FLAGS-006", title="base paths imply flag 16", severity="warning", spec="FACTS",
      section=_FACTS_SEC, clause="shallow clone or branch (base_paths) | 16 | 16",
      pylance="the spec texts do not name flag 16; pylance 14.0.2 sets it in both fields "
              "whenever base_paths is not empty", enforces="pylance",
      releases='pylance 14.0.2 sets writer/reader flag 16 whenever base_paths is non-empty; the spec texts do not name this flag')
def base_path_flag(ctx):
    if len(ctx.manifest.base_paths):
        yield from _missing(ctx, 16, "Manifest.base_paths is not empty")


@rule("FLAGS-007", title="no flag set for a feature the manifest does not use",
      severity="warning", spec="FACTS", section=_FACTS_SEC,
      clause="plain create/append/merge/project/index | 0 | 0",
      pylance="pylance 14.0.2 keeps flag 2 on an empty stable-row-id table and flag 16 after "
              "an Overwrite drops every inherited fragment; flags 1, 2 and 16 are therefore "
              "not required to be cleared", enforces="pylance")
def unused_flags(ctx):
    m = ctx.manifest
    reader, writer = expected_flags(m, _used(ctx))
    # flags a writer legitimately keeps without the feature in use right now
    sticky = 2 | 16 | 4 | 32
    for name, have, want in (("reader", int(m.reader_feature_flags), reader),
                             ("writer", int(m.writer_feature_flags), writer)):
        extra = have & ~want & ~sticky & KNOWN_FLAGS
        if name == "reader":
            extra &= ~8 if writer & 8 else ~0
        if extra:
            yield Finding(f"{name}_feature_flags has bits {extra:#x} set for features the "
                          f"manifest does not use", {"path": ctx.manifest_key})
