"""Negative fixtures for the FILE-* and ENC-* rules of the 2.1/2.2 reader, registered into
``conformance.invalid.CORRUPTIONS`` with its :func:`~conformance.invalid.corruption`.

The byte patches of ``conformance.invalid.BYTE_PATCHES`` cover the container rules and the
encodings the base dataset happens to use. The cases here cover the rest. Each one replaces
the base by a one-version dataset whose table makes pylance 14.0.2 choose the encoding under
test (:func:`variant`, normalized like the base so every run writes the same bytes), then
changes **one field of one page's layout protobuf** in the data file: the data region is kept
byte for byte, the tail (column metadata, offset tables, footer) is laid out again
(:func:`rewrite_tail`), and the manifest's ``file_size_bytes`` follows the new size. Every
case is deep (the damage is inside a data file). pylance samples FSST symbol tables, so an
FSST page differs from run to run; the FSST case therefore wraps a (reproducible) variable
page in an FSST node.
"""

from __future__ import annotations

import struct
from pathlib import Path

from google.protobuf import any_pb2

from reference_impl.proto import encodings_v2_1_pb2, file2_pb2

from .invalid import (
    ALSO,
    DEEP,
    _latest_m,
    corruption,
    latest_manifest,
    normalize,
    rebuild,
    rewrite_manifest,
)

FOOTER = struct.Struct("<QQQIIHH4s")


# -- tables that make pylance pick each encoding ---------------------------------------------

def _tables():
    import numpy as np
    import pyarrow as pa

    n = 300
    rng = np.random.default_rng(0)
    packed = {"lance-encoding:packed": "true"}
    return {
        "flat": pa.table({"f": pa.array(rng.random(n))}),
        "fsl": pa.table({"v": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(4 * n).astype(np.float32)), 4)}),
        "packed": pa.Table.from_arrays(
            [pa.StructArray.from_arrays([pa.array(np.arange(n, dtype=np.int32)), pa.array(rng.random(n))],
                                        ["a", "b"])],
            schema=pa.schema([pa.field("ps", pa.struct([("a", pa.int32()), ("b", pa.float64())]),
                                       metadata=packed)])),
        "vpacked": pa.Table.from_arrays(
            [pa.StructArray.from_arrays([pa.array(np.arange(n, dtype=np.int32)),
                                         pa.array([f"s{i}" for i in range(n)])], ["a", "s"])],
            schema=pa.schema([pa.field("vps", pa.struct([("a", pa.int32()), ("s", pa.string())]),
                                       metadata=packed)])),
        "dict": pa.table({"low": pa.array([["alpha-centauri", "betelgeuse", "canopus"][i % 3]
                                           for i in range(n)])}),
        "bitpacked": pa.table({"i": pa.array(np.arange(n, dtype=np.int64))}),
        "zstd": pa.Table.from_arrays(
            [pa.array([f"zz-{i % 5}" for i in range(n)])],
            schema=pa.schema([pa.field("z", pa.string(), metadata={"lance-encoding:compression": "zstd"})])),
        "fullzip": pa.table({"big": pa.array(["x" * 300 + str(i) for i in range(20)])}),
        "blob": pa.Table.from_arrays(
            [pa.array([bytes([i]) * 100 for i in range(20)], pa.large_binary())],
            schema=pa.schema([pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])),
    }


def variant(root: Path, table_name: str, version: str) -> Path:
    """Replace the dataset at ``root`` by one version of ``_tables()[table_name]`` written with
    pylance as file ``version``; return the path of its data file."""
    import shutil

    import lance

    if table_name == "rich":  # the 64-row 2.1-rich dataset of conformance.invalid
        rebuild(root, "2.1-rich")
    else:
        for child in list(root.iterdir()):
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        lance.write_dataset(_tables()[table_name], str(root), data_storage_version=version)
        normalize(root)
    return root / "data" / _latest_m(root).fragments[0].files[0].path


# -- re-laying a data file's tail ------------------------------------------------------------

def rewrite_tail(raw: bytes, columns: list, *, global_buffers=None, head_end=None) -> bytes:
    """The file with its column metadata replaced by ``columns`` (the data region up to the
    first column metadata is kept; offset tables and footer are written afresh)."""
    cm0, cmo, gbo, n_gb, n_cols, major, minor, magic = FOOTER.unpack(raw[-FOOTER.size:])
    gb = global_buffers if global_buffers is not None else [
        struct.unpack_from("<QQ", raw, gbo + 16 * i) for i in range(n_gb)]
    out = bytearray(raw[:head_end if head_end is not None else cm0])
    start = len(out)
    spans = []
    for c in columns:
        b = c.SerializeToString()
        spans.append((len(out), len(b)))
        out += b
    cmo_new = len(out)
    for p, s in spans:
        out += struct.pack("<QQ", p, s)
    gbo_new = len(out)
    for p, s in gb:
        out += struct.pack("<QQ", p, s)
    out += FOOTER.pack(start, cmo_new, gbo_new, len(gb), len(columns), major, minor, magic)
    return bytes(out)


def read_columns(raw: bytes) -> list:
    cm0, cmo, gbo, n_gb, n_cols, *_ = FOOTER.unpack(raw[-FOOTER.size:])
    cols = []
    for i in range(n_cols):
        p, s = struct.unpack_from("<QQ", raw, cmo + 16 * i)
        cols.append(file2_pb2.ColumnMetadata.FromString(raw[p:p + s]))
    return cols


def _set_size(root: Path, size: int) -> None:
    def edit(m):
        m.fragments[0].files[0].file_size_bytes = size
    rewrite_manifest(latest_manifest(root), edit)


def write_file(root: Path, path: Path, data: bytes) -> None:
    path.write_bytes(data)
    _set_size(root, len(data))


def edit_page(table_name: str, version: str, fn, *, column: int = 0, page: int = 0):
    """A corruption applying ``fn(layout, page)`` to one page's ``PageLayout`` (or, when
    ``fn`` returns "page-only", to the ``Page`` message alone)."""

    def apply(root: Path):
        path = variant(root, table_name, version)
        raw = path.read_bytes()
        cols = read_columns(raw)
        pg = cols[column].pages[page]
        a = any_pb2.Any.FromString(pg.encoding.direct.encoding)
        layout = encodings_v2_1_pb2.PageLayout.FromString(a.value)
        if fn(layout, pg) != "page-only":
            a.value = layout.SerializeToString()
            pg.encoding.direct.encoding = a.SerializeToString()
        write_file(root, path, rewrite_tail(raw, cols))

    return apply


def _mb(layout):
    return layout.mini_block_layout


def _register(rule_id: str, what: str, fn) -> None:
    corruption(rule_id, what)(fn)
    DEEP.add(rule_id)


# -- the cases -------------------------------------------------------------------------------

def _bss8(lay, pg):
    vc = _mb(lay).value_compression
    vc.Clear()
    vc.byte_stream_split.values.flat.bits_per_value = 8


def _value_width_32(lay, pg):
    vc = _mb(lay).value_compression
    kind = vc.WhichOneof("compression")
    if kind == "inline_bitpacking":
        vc.inline_bitpacking.uncompressed_bits_per_value = 32
    else:
        vc.flat.bits_per_value = 32


def _fsst_bad_table(lay, pg):
    # pylance's FSST symbol tables are sampled (the bytes differ from run to run), so the case
    # wraps a deterministic variable page in an FSST node instead
    vc = _mb(lay).value_compression
    inner = type(vc)()
    inner.CopyFrom(vc)
    vc.Clear()
    vc.fsst.values.CopyFrom(inner)
    vc.fsst.symbol_table = b"\x07"


def _vps_no_width(lay, pg):
    lay.full_zip_layout.value_compression.variable_packed_struct.fields[0].ClearField("bits_per_value")


CASES = [
    ("FILE-014", "flat", "2.1", "the first page's priority (first row) set to 3",
     lambda lay, pg: (setattr(pg, "priority", 3), "page-only")[1]),
    ("ENC-002", "flat", "2.1", "a float64 mini-block page's flat bits_per_value set to 128",
     lambda lay, pg: setattr(_mb(lay).value_compression.flat, "bits_per_value", 128)),
    ("ENC-010", "bitpacked", "2.1", "inline bit-packing uncompressed_bits_per_value set to 24",
     lambda lay, pg: setattr(_mb(lay).value_compression.inline_bitpacking, "uncompressed_bits_per_value", 24)),
    ("ENC-013", "flat", "2.1", "a float64 page's values re-labelled byte_stream_split of 8-bit values", _bss8),
    ("ENC-014", "fsl", "2.1", "fixed_size_list items_per_value set to 0",
     lambda lay, pg: setattr(_mb(lay).value_compression.fixed_size_list, "items_per_value", 0)),
    ("ENC-015", "packed", "2.1", "packed struct child widths [32, 64] changed to [32, 60]",
     lambda lay, pg: _mb(lay).value_compression.packed_struct.bits_per_value.__setitem__(1, 60)),
    ("ENC-016", "vpacked", "2.2", "the first variable packed struct field's bits_per_value removed", _vps_no_width),
    ("ENC-017", "dict", "2.1", "num_dictionary_items set to 1 (indices reach 2)",
     lambda lay, pg: setattr(_mb(lay), "num_dictionary_items", 1)),
    ("ENC-020", "zstd", "2.1", "the general compression scheme of a zstd page set to 2 (unknown)",
     lambda lay, pg: setattr(_general(lay).compression, "scheme", 2)),
    ("ENC-030", "rich", "2.1", "column t's variable values wrapped in an FSST node whose symbol table "
                               "is the single byte 07", _fsst_bad_table, 2),
    ("ENC-043", "fullzip", "2.1", "the full-zip repetition index buffer shortened by 4 bytes",
     lambda lay, pg: (pg.buffer_sizes.__setitem__(1, pg.buffer_sizes[1] - 4), "page-only")[1]),
    ("ENC-045", "bitpacked", "2.1", "an int64 page's values declared 32 bits wide", _value_width_32),
    ("ENC-047", "blob", "2.1", "the blob layout's inner layout changed from mini-block to full-zip",
     lambda lay, pg: lay.blob_layout.inner_layout.full_zip_layout.SetInParent()),
]


def _general(lay):
    """The General node of a page: the value compression or the dictionary's."""
    mb = _mb(lay)
    if mb.value_compression.WhichOneof("compression") == "general":
        return mb.value_compression.general
    return mb.dictionary.general


for _rid, _table, _version, _what, _fn, *_col in CASES:
    _where = "the 2.1-rich dataset of conformance.invalid" if _table == "rich" else "a one-column dataset"
    _register(_rid, f"{_version} data file of {_where}: {_what}",
              edit_page(_table, _version, _fn, column=_col[0] if _col else 0))


def _file_009(root: Path):
    path = variant(root, "bitpacked", "2.1")
    raw = path.read_bytes()
    write_file(root, path, rewrite_tail(raw, read_columns(raw)[:0]))


def _file_010(root: Path):
    """The 2.0 FileDescriptor claims one row more than the column's pages hold (a new
    descriptor is appended to the data region); the fragment's physical_rows follows it, so
    only the file itself is inconsistent."""
    from reference_impl.proto import file_pb2

    path = variant(root, "bitpacked", "2.0")
    raw = path.read_bytes()
    cm0, _cmo, gbo, n_gb, *_ = FOOTER.unpack(raw[-FOOTER.size:])
    gbufs = [struct.unpack_from("<QQ", raw, gbo + 16 * i) for i in range(n_gb)]
    pos, size = gbufs[0]
    desc = file_pb2.FileDescriptor.FromString(raw[pos:pos + size])
    desc.length += 1
    body = desc.SerializeToString()
    head = bytearray(raw[:cm0])
    head += b"\0" * (-len(head) % 64)
    gbufs[0] = (len(head), len(body))
    head += body
    write_file(root, path, rewrite_tail(bytes(head) + raw[cm0:], read_columns(raw), global_buffers=gbufs,
                                        head_end=len(head)))

    def edit(m):
        m.fragments[0].physical_rows += 1
    rewrite_manifest(latest_manifest(root), edit)


_register("FILE-009", "2.1 data file of a one-column dataset: its only column's metadata removed "
                      "(the schema still names the field)", _file_009)
_register("FILE-010", "2.0 data file of a one-column dataset: the FileDescriptor's row count "
                      "raised by one over the pages (and the fragment's physical_rows with it)", _file_010)
# DATAFILE-006 states the same requirement from the manifest's side: the field's column
# index must exist in the file, and the file now has no column.
ALSO["FILE-009"] = ["DATAFILE-006"]
