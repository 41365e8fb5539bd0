"""Deep structural checks of a v2.x data file, reused by the validator's FILE/ENC rules.

Every function takes a parsed :class:`~reference_impl.file.container.FileContainer` (or a
:class:`~reference_impl.file.reader.LanceFileReader`) and returns a list of
``(rule_id, message, offset)`` tuples, empty when the file is sound:

* :func:`buffers_in_file` (FILE-011) -- every page and column buffer lies inside the data
  region (before the column metadata);
* :func:`alignment` (FILE-012) -- page buffers and global buffer 0 start on 64-byte boundaries
  (pylance 14.0.2 rejects misaligned ones);
* :func:`page_lengths` (FILE-013) -- in 2.1+, each column's page lengths sum to the row count;
* :func:`priorities` (FILE-014) -- in 2.1+, each page's priority is the running row start;
  pages are contiguous and non-overlapping;
* :func:`encodings` (FILE-015) -- page encodings are ``direct`` Anys of the version's type
  (``/lance.encodings.ArrayEncoding`` for 2.0, ``/lance.encodings21.PageLayout`` for 2.1/2.2),
  and in 2.1+ every column's encoding a ``direct`` Any of ``/lance.encodings.ColumnEncoding``
  that parses (pylance refuses the file otherwise, missing and empty ones included);
* :func:`layout_grammar` (ENC-042) -- ``has_large_chunk`` set in 2.2 mini-block pages and not
  in 2.1; constant layout with a value only in 2.2;
* :func:`decode_all` (ENC-*) -- decoding every column gives the declared number of rows with
  consistent rep/def levels, monotonic offsets and matching value counts; a failure reports
  the decoder's rule id.
"""

from __future__ import annotations

from reference_impl.errors import FormatError, LanceError, UnsupportedFeature

from .page import column_encoding, page_layout

ALIGN = 64
ANY_URLS = {"2.0": "/lance.encodings.ArrayEncoding", "2.1": "/lance.encodings21.PageLayout",
            "2.2": "/lance.encodings21.PageLayout", "2.3": "/lance.encodings23.PlanarLayout"}


def _pages(container):
    for ci, col in enumerate(container.columns):
        for pi, page in enumerate(col.pages):
            yield ci, pi, page


def buffers_in_file(container) -> list:
    out = []
    limit = container.column_meta_start or container.size
    for ci, pi, page in _pages(container):
        if len(page.buffer_offsets) != len(page.buffer_sizes):
            out.append(("FILE-011", f"column {ci} page {pi}: {len(page.buffer_offsets)} offsets, "
                                    f"{len(page.buffer_sizes)} sizes", None))
        for bi, (o, s) in enumerate(zip(page.buffer_offsets, page.buffer_sizes, strict=False)):
            if s and o + s > limit:
                out.append(("FILE-011", f"column {ci} page {pi} buffer {bi} ({o}+{s}) runs past the "
                                        f"data region ending at {limit}", o))
    for ci, col in enumerate(container.columns):
        for o, s in zip(col.buffer_offsets, col.buffer_sizes, strict=False):
            if s and o + s > limit:
                out.append(("FILE-011", f"column {ci} buffer ({o}+{s}) runs past the data region", o))
    return out


def alignment(container) -> list:
    out = []
    for ci, pi, page in _pages(container):
        for bi, (o, s) in enumerate(zip(page.buffer_offsets, page.buffer_sizes, strict=False)):
            if s and o % ALIGN:
                out.append(("FILE-012", f"column {ci} page {pi} buffer {bi} at {o} is not 64-byte aligned", o))
    if container.global_buffers:
        o, s = container.global_buffers[0]
        if s and o % ALIGN:
            out.append(("FILE-012", f"global buffer 0 at {o} is not 64-byte aligned", o))
    return out


def page_lengths(container) -> list:
    if container.version_name == "2.0":
        return []
    from .arrow_types import column_scales

    scales = column_scales(container.fields)
    out = []
    for ci, col in enumerate(container.columns):
        total = sum(int(p.length) for p in col.pages)
        # a column under fixed-size lists of structs counts items (arrow_types.items_per_row)
        per = scales[ci] if ci < len(scales) else 1
        if total != container.num_rows * per:
            out.append(("FILE-013", f"column {ci} pages hold {total} rows, the file {container.num_rows}"
                        + (f" of {per} items" if per > 1 else ""), None))
    return out


def priorities(container) -> list:
    if container.version_name == "2.0":
        return []
    out = []
    for ci, col in enumerate(container.columns):
        row = 0
        for pi, page in enumerate(col.pages):
            if int(page.priority) != row:
                out.append(("FILE-014", f"column {ci} page {pi} has priority {page.priority}, "
                                        f"its first row is {row}", None))
                break
            row += int(page.length)
    return out


def encodings(container) -> list:
    from google.protobuf import any_pb2
    from google.protobuf.message import DecodeError

    want = ANY_URLS.get(container.version_name)
    out = []
    for ci, pi, page in _pages(container):
        loc = page.encoding.WhichOneof("location")
        if loc != "direct":
            out.append(("FILE-015", f"column {ci} page {pi}: encoding is {loc or 'missing'}, not direct", None))
            continue
        a = any_pb2.Any()
        try:
            a.ParseFromString(page.encoding.direct.encoding)
        except (DecodeError, RuntimeError, ValueError):
            out.append(("FILE-015", f"column {ci} page {pi}: encoding Any does not parse", None))
            continue
        if a.type_url != want:
            out.append(("FILE-015", f"column {ci} page {pi}: type {a.type_url!r}, {want!r} expected", None))
    for ci, meta in enumerate(container.columns if container.version_name != "2.0" else ()):
        try:  # (a 2.0 file's column encodings are FILE-050's, checked as its columns are built)
            column_encoding(meta, path=container.path, column=ci)
        except FormatError as exc:
            out.append(("FILE-015", exc.message, None))
    return out


def layout_grammar(container) -> list:
    v = container.version_name
    if v not in ("2.1", "2.2"):
        return []
    out = []
    for ci, pi, page in _pages(container):
        try:
            layout = page_layout(page, path=container.path)
        except (FormatError, UnsupportedFeature) as exc:
            out.append(("FILE-015", f"column {ci} page {pi}: {exc}", None))
            continue
        kind = layout.WhichOneof("layout")
        mb = layout.mini_block_layout if kind == "mini_block_layout" else (
            layout.blob_layout.inner_layout.mini_block_layout
            if kind == "blob_layout" and layout.blob_layout.inner_layout.WhichOneof("layout") == "mini_block_layout"
            else None)
        if mb is not None:
            if v == "2.1" and mb.has_large_chunk:
                out.append(("ENC-042", f"column {ci} page {pi}: has_large_chunk set in a 2.1 file", None))
            if v == "2.2" and not mb.has_large_chunk:
                out.append(("ENC-042", f"column {ci} page {pi}: 2.2 mini-block page without has_large_chunk", None))
        if kind == "constant_layout" and v == "2.1":
            c = layout.constant_layout
            if c.HasField("inline_value") or len(page.buffer_offsets) in (1, 3):
                out.append(("ENC-042", f"column {ci} page {pi}: 2.1 only accepts all-null constant pages", None))
    return out


#: rule areas whose decoder errors the deep data-file rules report under their own id
DATA_FILE_AREAS = ("ENC-", "FILE-", "BLOB-")


def error_finding(exc) -> tuple:
    """``(rule, message, offset)`` of a reader error. An error carrying the id of a rule that
    is not judged per data file (say SCHEMA-008 from the file's own schema) is reported as
    ENC-046 with that id in the message, so no decoder failure goes unreported."""
    rule = getattr(exc, "rule", None)
    msg, off = str(exc), getattr(exc, "offset", None)
    if rule and str(rule).startswith(DATA_FILE_AREAS):
        return (rule, msg, off)
    return ("ENC-046", f"[{rule}] {msg}" if rule and f"[{rule}]" not in msg else msg, off)


#: what a decoder may raise on hostile bytes besides FormatError/LanceError. Not MemoryError:
#: allocations are bounded by what the bytes can justify (a length is checked against the
#: buffer before anything is allocated), so running out of memory says nothing of the file.
DECODE_ERRORS = (ValueError, TypeError, IndexError, KeyError, OverflowError)


def decode_outcome(reader) -> tuple:
    """Decode every column once: ``(rows decoded, None)`` or ``(None, exception)``. The deep
    rules of every file version share this one decode (the validator caches it per file).

    A ``MemoryError`` is kept too (so the decode is not retried by every rule), without its
    traceback, whose frames would hold the arrays of the failed decode; it is no finding
    (:func:`outcome_findings` raises it again for the caller to report)."""
    try:
        return reader.read_all().num_rows, None
    except (FormatError, LanceError, *DECODE_ERRORS) as exc:
        return None, exc
    except MemoryError as exc:
        return None, MemoryError(str(exc))


def outcome_findings(outcome, expected_rows: int) -> list:
    """The findings of a :func:`decode_outcome`: a decoder error becomes one finding with
    its rule id; a wrong row count is ENC-046. Running out of memory is no finding about the
    file: the ``MemoryError`` is raised again (the validator reports the file as not
    checked)."""
    rows, exc = outcome
    if isinstance(exc, MemoryError):
        raise MemoryError(str(exc))
    if isinstance(exc, (FormatError, LanceError)):
        return [error_finding(exc)]
    if exc is not None:
        return [("ENC-046", f"decoding failed: {type(exc).__name__}: {exc}", None)]
    if rows != expected_rows:
        return [("ENC-046", f"decoded {rows} rows, the FileDescriptor says {expected_rows}", None)]
    return []


def decode_all(reader) -> list:
    """Decode every column; a decoder error becomes one finding with its rule id."""
    return outcome_findings(decode_outcome(reader), reader.num_rows)


STRUCTURAL = (buffers_in_file, alignment, page_lengths, priorities, encodings, layout_grammar)


def all_checks(container, reader=None) -> list:
    out = []
    for fn in STRUCTURAL:
        out.extend(fn(container))
    if reader is not None:
        out.extend(decode_all(reader))
    return out
