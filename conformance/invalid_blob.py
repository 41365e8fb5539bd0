"""Negative fixtures for the BLOB-* rules (blob v2 columns), registered into
``conformance.invalid.CORRUPTIONS``.

Each case replaces the base by :func:`write_blob_table`: a one-version 2.2 dataset written by
pylance 14.0.2 whose blob v2 column holds every kind a dataset can keep to itself (inline,
packed, dedicated, empty and null; small thresholds in the field metadata pick the kinds),
normalized like the base (sidecar directories follow their renamed data file). Then one thing
changes: a byte of one descriptor (the page is full-zip, so a descriptor's bytes appear as
written: ``u8 kind | u64 position | u64 size | u32 blob_id | u32 uri_len | uri``), a name in
the file's schema, a sidecar file, or the manifest's base paths. The sizes of the values are
chosen so every searched byte pattern occurs once.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from .invalid import (
    DEEP,
    _latest_m,
    corruption,
    edit_transaction_everywhere,
    latest_manifest,
    normalize,
    rewrite_manifest,
)

#: (value, kind pylance picks with the thresholds below)
INLINE = b"inline-blob-value"            # 17 bytes  <= 24: kind 0
EMPTY = b""                              # kind 0, size 0
PACKED = (b"p" * 100, b"q" * 200)        # 25..1000: kind 1, one sidecar (id 1)
DEDICATED = (b"d" * 1500, b"e" * 3000)   # > 1000: kind 2, sidecars 2 and 3
THRESHOLDS = {"lance-encoding:blob-inline-size-threshold": "24",
              "lance-encoding:blob-dedicated-size-threshold": "1000"}
EXTERNAL_BASE_KEY = "external.bin"


def blob_values() -> list:
    return [INLINE, None, EMPTY, PACKED[0], PACKED[1], DEDICATED[0], DEDICATED[1]]


def write_blob_table(root: Path, *, external_base: Path | None = None) -> Path:
    """Write the blob v2 dataset at ``root`` with pylance (replacing what is there) and
    normalize it. ``external_base``: also register that directory as a base path and add a
    row referencing ``external.bin`` under it (kind 3, blob_id = the base's id)."""
    import lance
    import pyarrow as pa
    from lance import DatasetBasePath
    from lance.blob import BlobType, blob_array

    root = Path(root)
    if root.exists():
        for child in list(root.iterdir()):
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    values = blob_values()
    kwargs = {}
    if external_base is not None:
        external_base.mkdir(parents=True, exist_ok=True)
        (external_base / EXTERNAL_BASE_KEY).write_bytes(bytes(range(256)))
        values.append(f"{Path(external_base).resolve().as_uri()}/{EXTERNAL_BASE_KEY}")
        kwargs["initial_bases"] = [DatasetBasePath(str(Path(external_base).resolve()), name="ext")]
    field = pa.field("blob", BlobType(), metadata=THRESHOLDS)
    table = pa.Table.from_arrays([pa.array(range(len(values)), pa.int64()), blob_array(values)],
                                 schema=pa.schema([pa.field("id", pa.int64()), field]))
    lance.write_dataset(table, str(root), data_storage_version="2.2", **kwargs)
    return canonical_maps(normalize(root))


_BLOB_ENTRY = b"R\x1b\n\x13lance-encoding:blob\x12\x04true"
_PACKED_ENTRY = b"R\x1d\n\x15lance-encoding:packed\x12\x04true"


def canonical_maps(root: Path) -> Path:
    """pylance serializes protobuf maps in a varying order (field metadata in the data file's
    FileDescriptor, in the manifest and in the transaction); put every map in key order so
    each generation writes the same bytes. In data files the blob struct's two metadata
    entries are swapped in place (same length); manifests and transactions are re-encoded
    with sorted maps."""
    from reference_impl.proto import transaction_pb2

    from .invalid import encode_manifest, manifests, split_manifest

    for p in sorted((root / "data").glob("*.lance")):
        raw = p.read_bytes()
        p.write_bytes(raw.replace(_PACKED_ENTRY + _BLOB_ENTRY, _BLOB_ENTRY + _PACKED_ENTRY))
    for _v, p in manifests(root):
        m, idx, txn = split_manifest(p.read_bytes())
        if txn is not None:
            txn = transaction_pb2.Transaction.FromString(txn).SerializeToString(deterministic=True)
        p.write_bytes(encode_manifest(m, index=idx, txn=txn, deterministic=True))
    for p in sorted((root / "_transactions").glob("*.txn")):
        t = transaction_pb2.Transaction.FromString(p.read_bytes())
        p.write_bytes(t.SerializeToString(deterministic=True))
    return root


def data_file(root: Path) -> Path:
    return root / "data" / _latest_m(root).fragments[0].files[0].path


def descriptor_bytes(kind: int, position: int, size: int, blob_id: int = 0, uri: bytes = b"") -> bytes:
    """One descriptor as the full-zip page stores it."""
    return struct.pack("<BQQII", kind, position, size, blob_id, len(uri)) + uri


def patch_descriptor(path: Path, old: bytes, new: bytes) -> None:
    """Replace the one occurrence of descriptor bytes ``old`` in the data file by ``new``."""
    raw = path.read_bytes()
    if raw.count(old) != 1 or len(old) != len(new):
        raise RuntimeError(f"descriptor {old.hex()} occurs {raw.count(old)} times in {path}")
    path.write_bytes(raw.replace(old, new))


def inline_descriptor(path: Path) -> bytes:
    """The stored descriptor of :data:`INLINE` (its position is the first 64-aligned slot)."""
    raw = path.read_bytes()
    for pos in range(0, len(raw), 64):
        d = descriptor_bytes(0, pos, len(INLINE))
        if raw.count(d) == 1:
            return d
    raise RuntimeError(f"no inline descriptor of {len(INLINE)} bytes in {path}")


@corruption("BLOB-001", "2.2 blob v2 dataset: the data file's detached descriptor field 'kind' "
                        "renamed 'kinx' in the FileDescriptor schema (same length)")
def _blob_001(root: Path):
    write_blob_table(root)
    p = data_file(root)
    raw = p.read_bytes()
    assert raw.count(b"\x04kind") == 1
    p.write_bytes(raw.replace(b"\x04kind", b"\x04kinx"))


@corruption("BLOB-002", "2.2 blob v2 dataset: the kind byte of the inline descriptor set to 7")
def _blob_002(root: Path):
    write_blob_table(root)
    p = data_file(root)
    old = inline_descriptor(p)
    patch_descriptor(p, old, b"\x07" + old[1:])


@corruption("BLOB-003", "2.2 blob v2 dataset: the inline descriptor's size set past the end of "
                        "the data file")
def _blob_003(root: Path):
    write_blob_table(root)
    p = data_file(root)
    old = inline_descriptor(p)
    pos = struct.unpack_from("<Q", old, 1)[0]
    patch_descriptor(p, old, descriptor_bytes(0, pos, 1 << 40))


@corruption("BLOB-004", "2.2 blob v2 dataset: the dedicated sidecar of blob_id 3 deleted")
def _blob_004(root: Path):
    from reference_impl.table.blob import sidecar_name

    write_blob_table(root)
    p = data_file(root)
    (p.parent / p.stem / sidecar_name(3)).unlink()


def _drop_bases(m):
    del m.base_paths[:]


@corruption("BLOB-005", "2.2 blob v2 dataset with a base-relative external blob: the base path "
                        "it names removed from the manifest (no data file uses it)")
def _blob_005(root: Path):
    write_blob_table(root, external_base=root.parent / f"{root.name}-external")
    rewrite_manifest(latest_manifest(root), _drop_bases)
    edit_transaction_everywhere(root, lambda t: t.overwrite.ClearField("initial_bases"))
    canonical_maps(root)
    shutil.rmtree(root.parent / f"{root.name}-external")


@corruption("BLOB-006", "2.2 blob v2 dataset: an absolute external blob reference "
                        "(file:///lance-conformance/missing/blob.bin) to an object that does not exist")
def _blob_006(root: Path):
    import lance
    import pyarrow as pa
    from lance.blob import BlobType, blob_array

    for child in list(root.iterdir()):
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    values = [INLINE, "file:///lance-conformance/missing/blob.bin"]
    table = pa.Table.from_arrays([pa.array([0, 1], pa.int64()), blob_array(values)],
                                 schema=pa.schema([pa.field("id", pa.int64()),
                                                   pa.field("blob", BlobType())]))
    lance.write_dataset(table, str(root), data_storage_version="2.2",
                        allow_external_blob_outside_bases=True)
    canonical_maps(normalize(root))


DEEP.update({"BLOB-001", "BLOB-002", "BLOB-003", "BLOB-004", "BLOB-005", "BLOB-006"})
