"""What a dataset's bytes say about the features a reader needs, and naming a broken cell's cause.

:func:`dataset_facts` decodes every manifest of a dataset with ``reference_impl`` (never with
the release under test) and returns, per version, a set of *facts*: short strings such as

==============================  ==========================================================
``naming:V2``                   the manifest name ``{u64::MAX-N:020}.manifest`` (``V1``:
                                ``N.manifest``)
``file:2.1``                    a ``DataFile`` whose ``file_major/minor_version`` is 2.1
``file:2.2@unstable``           ... written by a release older than the first that wrote it
                                as a stable version (the manifest's ``writer_version``)
``reader-flag:STABLE_ROW_IDS``  a bit of ``Manifest.reader_feature_flags`` (``writer-flag:``
                                likewise)
``deletion:BITMAP``             a deletion file of that kind
``txn:rewrite``                 the operation of the version's transaction
``index:BTreeIndexDetails``     an index of that kind
``row-id-sequence``             fragments carry row id sequences
``manifest-field:config``       a ``Manifest`` protobuf field that is set
``unknown-field:manifest.99``   a field the reference's protobuf schema does not know
``encoding:MiniBlockLayout``    a message type found in a page encoding
``tags``                        the dataset has tags
==============================  ==========================================================

:func:`name_cause` names why a reader did not read a version identically: the facts of that
version that no version the same reader *did* read identically has (found from this run's
observations), then the facts :data:`FIRST_READER` says the reader's release predates. The
table is used to name causes only, never to decide a cell's outcome.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The first release observed to read datasets with a fact (pylance version tuples), from
#: this kit's matrix of 16 pylance releases (0.10.18 ... 14.0.2; ``docs/compat-matrix.md``,
#: ``first_readers`` of a run's JSON). Used only to name causes, never to judge a cell.
FIRST_READER: dict[str, tuple[str, tuple[int, ...]]] = {
    "naming:V2": ("V2 manifest names ({u64::MAX-N:020}.manifest)", (0, 18)),
    # 2.0 files of 0.18 and later make 0.14 panic; 0.16 reads every 2.0 file seen
    "file:2.0": ("data files of storage version 2.0", (0, 16)),
    "file:2.1": ("data files of storage version 2.1", (0, 18)),
    "file:2.1@stable": ("2.1 data files in the form written from lance 0.38 on", (0, 38)),
    "file:2.2": ("data files of storage version 2.2", (0, 38)),
    "file:2.2@stable": ("2.2 data files in the form written from lance 4.0 on", (4, 0)),
    "file:2.3": ("data files of storage version 2.3", (4, 0)),
    "file:2.3@stable": ("2.3 data files in the form written by lance 14.0", (14, 0)),
    "reader-flag:STABLE_ROW_IDS": ("reader feature flag 2 (stable row ids)", (0, 16)),
    "deletion:BITMAP": ("Roaring bitmap deletion files", (0, 10)),
}

#: The first release writing the form of a storage version that the newest releases read:
#: files of that version written by an older release (``Manifest.writer_version``) hold an
#: earlier, unstable form (observed: 14.0.2 refuses 2.1 files of 0.18-0.30, 12.0 and later
#: refuse 2.2 files of 0.38-1.0, 14.0.2 refuses 2.3 files of 4.0-13.0).
FIRST_STABLE_WRITER: dict[str, tuple[int, ...]] = {
    "2.1": (0, 38),
    "2.2": (4, 0),
    "2.3": (14, 0),
}

#: The facts whose first reader a run reports (``CompatMatrix.first_readers``).
NOTABLE = ("file:", "naming:", "reader-flag:", "deletion:", "manifest-tail:", "index:")

MAX_FILES_PER_VERSION = 8
MAX_PAGES_PER_COLUMN = 16
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """``(0, 38, 3)`` from ``"0.38.3"`` or ``"pylance==0.38.3"``; None without a version."""
    m = _VERSION.search(text or "")
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


# -- facts from bytes -------------------------------------------------------------------------

@dataclass
class VersionFacts:
    """The facts of one version, and who wrote it (``Manifest.writer_version``)."""

    version: int
    facts: set[str]
    writer: str = ""
    error: str | None = None  # the reference could not decode this version


def _repeated(fd) -> bool:
    flag = getattr(fd, "is_repeated", None)
    if flag is not None:
        return bool(flag() if callable(flag) else flag)
    return fd.label == fd.LABEL_REPEATED


def _message_types(msg, out: set[str], depth: int = 0) -> None:
    if depth > 12:
        return
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        items = list(value)[:8] if _repeated(fd) else [value]
        for item in items:
            if hasattr(item, "ListFields"):
                out.add(fd.message_type.name)
                _message_types(item, out, depth + 1)


def _encodings(ds, m, grammar: dict[str, set[bool]] | None = None) -> set[str]:
    """The message types of the page encodings of (a bounded number of) the data files.
    ``grammar`` collects, per file version, the ``MiniBlockLayout.has_large_chunk`` values
    seen (the u32 chunk grammar that tells the stable 2.2 form from the earlier one)."""
    from google.protobuf import any_pb2

    from reference_impl.file.container import read_container
    from reference_impl.proto import encodings_v2_0_pb2, encodings_v2_1_pb2

    found: set[str] = set()
    files = [df for frag in m.fragments for df in frag.files][:MAX_FILES_PER_VERSION]
    for df in files:
        if df.file_major_version < 2 and (df.file_major_version, df.file_minor_version) != (0, 3):
            continue
        try:
            store, key = ds.data_file_location(df)
            container = read_container(store, key)
        except Exception:  # noqa: BLE001 - an unreadable file is named by other facts
            found.add("unreadable-file")
            continue
        for col in container.columns:
            for page in list(col.pages)[:MAX_PAGES_PER_COLUMN]:
                if page.encoding.WhichOneof("location") != "direct":
                    continue
                a = any_pb2.Any()
                try:
                    a.ParseFromString(page.encoding.direct.encoding)
                    if a.type_url.endswith("encodings21.PageLayout"):
                        msg = encodings_v2_1_pb2.PageLayout()
                    elif a.type_url.endswith("encodings.ArrayEncoding"):
                        msg = encodings_v2_0_pb2.ArrayEncoding()
                    else:
                        found.add(a.type_url.rsplit("/", 1)[-1])
                        continue
                    msg.ParseFromString(a.value)
                except Exception:  # noqa: BLE001 - an encoding we cannot parse is a fact too
                    found.add("unparsed-encoding")
                    continue
                _message_types(msg, found)
                if grammar is not None and isinstance(msg, encodings_v2_1_pb2.PageLayout) \
                        and msg.WhichOneof("layout") == "mini_block_layout":
                    key = f"{df.file_major_version}.{df.file_minor_version}"
                    grammar.setdefault(key, set()).add(msg.mini_block_layout.has_large_chunk)
    return {f"encoding:{name}" for name in found}


def _version_facts(ds, scheme: str, *, encodings: bool) -> VersionFacts:
    from reference_impl.table import flags
    from reference_impl.table.fragment import data_file_version
    from reference_impl.table.transaction import operation_name

    m, mf = ds.manifest, ds.manifest_file
    writer = f"{m.writer_version.library} {m.writer_version.version}".strip()
    upstream = m.writer_version.library in ("lance", "pylance", "lancedb")
    wv = version_tuple(m.writer_version.version) if upstream else None
    grammar: dict[str, set[bool]] = {}
    encoding_facts = _encodings(ds, m, grammar) if encodings else set()
    facts = {f"naming:{scheme.upper()}", f"manifest-tail:{mf.tail_major}.{mf.tail_minor}"}
    facts |= {f"reader-flag:{n}" for n in flags.flag_names(m.reader_feature_flags)}
    facts |= {f"writer-flag:{n}" for n in flags.flag_names(m.writer_feature_flags)}
    for frag in m.fragments:
        for df in frag.files:
            fv = data_file_version(df)
            facts.add(f"file:{fv}")
            era = _era(fv, grammar.get(fv), wv, upstream)
            if era:
                facts.add(f"file:{fv}@{era}")
            if era == "unstable" and wv:
                # the unstable forms changed from release to release: name the writer's
                facts.add(f"file:{fv}@unstable:{wv[0]}.{wv[1]}")
        if frag.HasField("deletion_file"):
            kind = {0: "ARROW_ARRAY", 1: "BITMAP"}.get(frag.deletion_file.file_type, "unknown")
            facts.add(f"deletion:{kind}")
        if frag.HasField("row_id_sequence") or frag.WhichOneof("row_id_sequence") is not None:
            facts.add("row-id-sequence")
    facts |= {f"manifest-field:{fd.name}" for fd, _ in m.ListFields()}
    facts |= {f"unknown-field:{where}.{n}" for where, items in mf.unknown_fields.items()
              for n, _, _ in items}
    try:
        txn = ds.transaction()
        if txn is not None:
            facts.add(f"txn:{operation_name(txn)}")
    except Exception:  # noqa: BLE001 - a missing transaction file is no read feature
        pass
    try:
        for idx in ds.list_indices():
            kind = (idx.index_details.type_url.rsplit(".", 1)[-1]
                    if idx.HasField("index_details") else "unknown")
            facts.add(f"index:{kind}")
    except Exception:  # noqa: BLE001
        facts.add("index:unreadable")
    facts |= encoding_facts
    return VersionFacts(ds.version, facts, writer)


def _era(fv: str, large_chunks: set[bool] | None, wv: tuple[int, ...] | None,
         upstream: bool) -> str | None:
    """``"stable"`` or ``"unstable"`` for a file version with an earlier form, else None.

    2.2: the bytes decide: stable 2.2 mini-block pages use the u32 chunk grammar
    (``has_large_chunk``), the earlier form does not. Otherwise the release that wrote the
    manifest (``writer_version``) against :data:`FIRST_STABLE_WRITER`; a writer that is not
    a Lance release writes the current form."""
    stable = FIRST_STABLE_WRITER.get(fv)
    if stable is None:
        return None
    if fv == "2.2" and large_chunks:
        return "stable" if all(large_chunks) else "unstable"
    if wv is not None:
        return "unstable" if wv < stable else "stable"
    return None if upstream else "stable"


def dataset_facts(uri: str, *, encodings: bool = True) -> dict[int, VersionFacts]:
    """The facts of every listed version of the dataset at ``uri`` (see the module docstring).
    A version the reference cannot decode keeps the facts its file name gives and the error."""
    from reference_impl.dataset import open_dataset

    out: dict[int, VersionFacts] = {}
    try:
        ds = open_dataset(uri)
        entries = ds.version_entries()
    except Exception as exc:  # noqa: BLE001 - nothing decodable: say so
        return {0: VersionFacts(0, {"unopenable"}, error=f"{type(exc).__name__}: {exc}")}
    tags = False
    try:
        tags = bool(ds.tags.list())
    except Exception:  # noqa: BLE001
        pass
    for e in entries:
        try:
            other = ds if e.version == ds.version else ds.checkout_version(e.version)
            vf = _version_facts(other, e.scheme, encodings=encodings)
        except Exception as exc:  # noqa: BLE001
            vf = VersionFacts(e.version, {f"naming:{e.scheme.upper()}"},
                              error=f"{type(exc).__name__}: {exc}")
        if tags:
            vf.facts.add("tags")
        out[e.version] = vf
    return out


# -- naming causes ----------------------------------------------------------------------------

def describe(fact: str) -> str:
    """A reader-facing phrase for ``fact``."""
    if fact in FIRST_READER:
        return FIRST_READER[fact][0]
    if "@" in fact and fact.startswith("file:"):
        v, _, era = fact[5:].partition("@")
        first = ".".join(map(str, FIRST_STABLE_WRITER.get(v, ())))
        if era.startswith("unstable:"):
            return (f"storage version {v} in the unstable form of lance {era[9:]} "
                    f"(the form read today is written from lance {first} on)")
        if era == "unstable":
            return f"storage version {v} in the earlier form written before lance {first}"
        return f"storage version {v} in the form written from lance {first} on"
    kind, _, rest = fact.partition(":")
    return {"naming": f"{rest} manifest names", "file": f"data files of storage version {rest}",
            "manifest-tail": f"manifest tail version {rest}",
            "reader-flag": f"reader feature flag {rest}", "writer-flag": f"writer feature flag {rest}",
            "deletion": f"{rest} deletion files", "txn": f"a {rest} transaction",
            "index": f"an index {rest}", "manifest-field": f"the manifest field {rest}",
            "unknown-field": f"the protobuf field {rest} the reference does not know",
            "encoding": f"the encoding {rest}"}.get(kind, fact)


#: Facts that never explain a broken read by themselves (every dataset has one of them).
_BACKGROUND = ("manifest-field:", "writer-flag:", "txn:")
#: Facts that follow from a storage version: named only when nothing stronger differs.
_CONSEQUENCES = ("encoding:", "unknown-field:")

_ORDER = ("file:", "naming:", "reader-flag:", "manifest-tail:", "deletion:", "index:",
          "row-id", "tags", "unknown-field:", "encoding:", "manifest-field:", "writer-flag:",
          "txn:")


def _rank(fact: str) -> tuple:
    for i, prefix in enumerate(_ORDER):
        if fact.startswith(prefix):
            return (i, 0 if "@" in fact else 1, fact)
    return (len(_ORDER), 1, fact)


def _reads_before(fact: str, release: tuple[int, ...] | None) -> bool:
    return release is not None and fact in FIRST_READER and release < FIRST_READER[fact][1]


def name_cause(facts: set[str], read_ok: set[str], reader_release: tuple[int, ...] | None, *,
               violated: list[str] | None = None, limit: int = 3) -> tuple[list[str], str]:
    """``(cause facts, text)`` for a version ``facts`` that a reader did not read identically.

    ``read_ok``: the union of the facts of every version this reader read identically in the
    run. ``reader_release``: the reader's pylance/lancedb version, None for other readers.
    ``violated``: the validator's rule ids for the dataset; named after the byte facts (or
    alone, when no fact differs: a writer bug is then the cause).
    """
    new = set(facts - read_ok)
    new |= {f for f in facts if _reads_before(f, reader_release)}
    strong = [f for f in new if not f.startswith(_BACKGROUND + _CONSEQUENCES)]
    if not strong:
        strong = [f for f in new if f.startswith(_CONSEQUENCES)]
    eras = {f.split("@")[0] for f in strong if f.startswith("file:") and "@" in f}
    eras |= {f.rsplit(":", 1)[0] for f in strong if f.startswith("file:") and "@unstable:" in f}
    strong = [f for f in strong if f not in eras]  # the era of a version says more
    chosen = sorted(strong, key=_rank)[:limit]
    parts = []
    for f in chosen:
        text = describe(f)
        if _reads_before(f, reader_release):
            text += f" (read from {'.'.join(map(str, FIRST_READER[f][1]))} on)"
        parts.append(text)
    if violated:
        # a reader older than a fact of the bytes is refused for that fact; otherwise the
        # rules the writer broke come first
        first = not any(_reads_before(f, reader_release) for f in chosen)
        rules = "invalid:" + ",".join(violated)
        text = "the writer's dataset breaks " + ", ".join(violated)
        if first:
            chosen.insert(0, rules)
            parts.insert(0, text)
        else:
            chosen.append(rules)
            parts.append(text)
    if not parts:
        return ["unexplained"], ("no fact of the bytes that this reader did not read elsewhere "
                                 "(a bug of the reader, or a data-dependent encoding)")
    return chosen, "; ".join(parts)
