"""MANIFEST-*: the manifest file's framing and naming (spec 001 "Manifest", FACTS §A).

Byte layout of ``_versions/*.manifest``::

    [IndexSection  u32-LE len | protobuf]   optional; offset in Manifest.index_section (6)
    [Transaction   u32-LE len | protobuf]   offset in Manifest field 23 (pylance 14) / 21
    [Manifest      u32-LE len | protobuf]   at P; must end exactly at filesize - 16
    u64-LE P | u16-LE major=0 | u16-LE minor=2 | b"LANC"      (16-byte tail)

Names: V1 ``{v}.manifest``, V2 ``{u64::MAX - v:020}.manifest``, detached ``d{v}.manifest``.
The framing rules (001-005) look at the manifests of the versions being checked; the
engine reads each manifest once and records why one could not be read.
"""

from __future__ import annotations

from .registry import Finding, rule

_FRAMING = "Manifest file framing (`_versions/*.manifest`)"


def _load_errors(ctx, rule_id: str, default_rule: str | None = None):
    for entry in ctx.selected_entries():
        ctx.version_facts(entry.version)  # make sure it was read (the engine streams them)
        exc = ctx.load_errors.get(entry.key)
        if exc is None:
            continue
        got = getattr(exc, "rule", None)
        if got is None or not str(got).startswith("MANIFEST-"):
            got = default_rule
        if got == rule_id:
            yield Finding(getattr(exc, "message", str(exc)),
                          {"version": entry.version, "path": entry.key,
                           "offset": getattr(exc, "offset", None)})


@rule("MANIFEST-001", title="manifest ends with the 16-byte tail and magic LANC",
      severity="error", spec="FACTS", section=_FRAMING,
      clause="u64-LE P | u16-LE major=0 | u16-LE minor=2 | b\"LANC\" (16-byte tail)",
      scope="table",
      refusal='a manifest without its tail and magic cannot be decoded')
def manifest_tail(ctx):
    yield from _load_errors(ctx, "MANIFEST-001")


@rule("MANIFEST-002", title="manifest length prefix is in bounds and ends at size-16",
      severity="error", spec="FACTS", section=_FRAMING,
      clause="[Manifest u32-LE len | protobuf] offset P; must end exactly at filesize-16",
      scope="table",
      refusal='a manifest whose length prefix leaves the file cannot be decoded')
def manifest_length(ctx):
    yield from _load_errors(ctx, "MANIFEST-002")


@rule("MANIFEST-003", title="the Manifest protobuf parses", severity="error", spec="001",
      section="Dataset Directory",
      clause="A Manifest file includes the metadata to describe a version of the dataset.",
      scope="table")
def manifest_parses(ctx):
    yield from _load_errors(ctx, "MANIFEST-003", default_rule="MANIFEST-003")
    for entry in ctx.selected_entries():
        if entry.key in ctx.load_errors:
            exc = ctx.load_errors[entry.key]
            if type(exc).__name__ == "NotFound":
                yield Finding(f"manifest listed but unreadable: {exc}",
                              {"version": entry.version, "path": entry.key})


@rule("MANIFEST-004", title="the index section is framed and parses", severity="error",
      spec="FACTS", section=_FRAMING,
      clause="[IndexSection u32-LE len | protobuf] optional; offset in Manifest.index_section (6)",
      scope="table",
      refusal='an index section that is not framed or does not parse cannot be read')
def index_section(ctx):
    yield from _load_errors(ctx, "MANIFEST-004")


@rule("MANIFEST-005", title="the inline transaction section is framed and parses",
      severity="error", spec="FACTS", section=_FRAMING,
      clause="[Transaction u32-LE len | protobuf] offset in Manifest field 23",
      scope="table",
      refusal='an inline transaction that is not framed or does not parse cannot be read')
def transaction_section(ctx):
    yield from _load_errors(ctx, "MANIFEST-005")


@rule("MANIFEST-006", title="V1 and V2 manifest names are not mixed", severity="error",
      spec="REFS-NAMESPACE-COMMIT", section="7. Version discovery edge cases",
      clause="V1 and V2 names for versions in the same directory | Opening fails ... Found "
             "multiple manifest naming schemes in the same directory",
      scope="table",
      refusal="with V1 and V2 names mixed a reader cannot tell which file is a version's manifest; pylance 14.0.2 refuses to open such a table")
def names_not_mixed(ctx):
    schemes = {e.scheme for e in ctx.version_entries if e.scheme in ("v1", "v2")}
    if len(schemes) > 1:
        v1 = sorted(e.key for e in ctx.version_entries if e.scheme == "v1")
        v2 = sorted(e.key for e in ctx.version_entries if e.scheme == "v2")
        yield Finding(f"_versions/ mixes V1 names ({v1[0]}, ...) and V2 names ({v2[0]}, ...)",
                      {"path": "_versions"})


@rule("MANIFEST-007", title="the version in the manifest's name equals Manifest.version",
      severity="error", spec="FACTS", section=_FRAMING,
      clause="Names: V1 `_versions/{v}.manifest`; V2 `_versions/{u64::MAX - v:020}.manifest`",
      refusal="a reader that opens version N by its file name would get another version's contents")
def name_matches_version(ctx):
    if int(ctx.manifest.version) != int(ctx.version):
        yield Finding(f"{ctx.manifest_key} is named for version {ctx.version} but holds "
                      f"Manifest.version {ctx.manifest.version}", {"path": ctx.manifest_key})


#: manifest tail versions that releases write: (0, 1) up to pylance 0.39, (0, 2) from 1.0 on
KNOWN_TAIL_VERSIONS = ((0, 1), (0, 2))


@rule("MANIFEST-008", title="the manifest tail names a version releases write (0.1 or 0.2)",
      severity="error", spec="FACTS", section=_FRAMING,
      clause="u64-LE P | u16-LE major=0 | u16-LE minor=2 | b\"LANC\"",
      refusal="the tail's version names the manifest file's framing; a tail naming a version "
              "no release writes declares a framing no reader knows",
      releases="pylance 0.10 to 0.39.x (and lancedb releases bundling them) end manifests with "
               "minor version 1, pylance 1.0 and later (lancedb 0.40) with 2; both are read by "
               "every release and neither draws a finding")
def tail_version(ctx):
    tv = getattr(ctx.mf, "tail_version", None)
    if tv is None and hasattr(ctx.mf, "tail_major"):
        tv = (ctx.mf.tail_major, ctx.mf.tail_minor)
    if tv is not None and tuple(tv) not in KNOWN_TAIL_VERSIONS:
        yield Finding(f"manifest tail version is {tv[0]}.{tv[1]}; releases write 0.1 or 0.2",
                      {"path": ctx.manifest_key})


@rule("MANIFEST-009", title="the inline transaction offset is recorded in field 23",
      severity="warning", spec="FACTS", section=_FRAMING,
      clause="pylance 14 writes the transaction offset in field 23; the Nov-2025 proto names "
             "field 21 transaction_section and 14.0.2 never writes 21.",
      pylance="pylance 14.0.2 writes field 23 on every commit and ignores field 21",
      enforces="pylance",
      releases="pylance up to 1.x and lancedb 0.40 write no inline transaction (only the .txn "
               "file): no finding; releases that inline it use field 23")
def transaction_field(ctx):
    m = ctx.manifest
    has21, has23 = m.HasField("transaction_section_spec"), m.HasField("transaction_section")
    if has21 and not has23:
        yield Finding("the transaction offset is only in field 21 (spec proto name); pylance "
                      "14.0.2 reads field 23", {"path": ctx.manifest_key})


@rule("MANIFEST-010", title="detached names hold detached versions", severity="error",
      spec="REFS-NAMESPACE-COMMIT", section="6. Detached versions",
      clause="a random u64 with bit 63 set as the version ... The manifest is "
             "_versions/d{version in decimal}.manifest",
      refusal="a reader resolving a detached version by its file name would get another version's contents")
def detached_names(ctx):
    entry = ctx.table.entry(ctx.version)
    detached_name = entry is not None and entry.scheme == "detached"
    bit63 = bool(int(ctx.manifest.version) >> 63)
    if detached_name and not bit63:
        yield Finding(f"{ctx.manifest_key} is a detached name but version "
                      f"{ctx.manifest.version} lacks bit 63", {"path": ctx.manifest_key})
    if not detached_name and bit63:
        yield Finding(f"version {ctx.manifest.version} has bit 63 set (detached) but is "
                      f"stored under an attached name", {"path": ctx.manifest_key})


_SEMVER = __import__("re").compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


@rule("MANIFEST-011", title="writer_version names the library and a semver without 'v'",
      severity="warning", spec="001", section="Manifest",
      clause="However, if it ... is semantically versioned, it should be a valid semver string without any "
             "'v' ... prefix. For example: `2.0.0`, `2.0.0-rc.1`.")
def writer_version(ctx):
    m = ctx.manifest
    if not m.HasField("writer_version"):
        yield Finding("Manifest.writer_version is absent", {"path": ctx.manifest_key})
        return
    wv = m.writer_version
    if not wv.library:
        yield Finding("writer_version.library is empty", {"path": ctx.manifest_key})
    looks_semver = wv.version[:1].isdigit() or wv.version[:1] in "vV"
    if looks_semver and not _SEMVER.match(wv.version):
        yield Finding(f"writer_version.version {wv.version!r} is not a semver string without "
                      f"a 'v' prefix", {"path": ctx.manifest_key})


@rule("MANIFEST-012", title="writer_version.version is the core version only",
      severity="warning", spec="004", section="Manifest",
      clause="For forward compatibility with older readers, when writing new manifests this "
             "field should contain only the core version (major.minor.patch) without any "
             "prerelease or build metadata. The prerelease/build info should be stored in "
             "the separate prerelease and build_metadata fields instead.")
def writer_version_core(ctx):
    """A semver ``version`` with a ``-prerelease`` or ``+build`` part belongs split into
    ``version`` (field 2), ``prerelease`` (3) and ``build_metadata`` (4)."""
    m = ctx.manifest
    if not m.HasField("writer_version"):
        return  # MANIFEST-011 reports the absent writer_version
    match = _SEMVER.match(m.writer_version.version)
    if match and (match.group(4) or match.group(5)):
        yield Finding(f"writer_version.version {m.writer_version.version!r} carries prerelease "
                      f"or build metadata; they belong in fields 3 and 4",
                      {"path": ctx.manifest_key})
