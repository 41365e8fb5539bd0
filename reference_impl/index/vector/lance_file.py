"""The Lance-file layout of a vector index: ``index.idx`` + ``auxiliary.idx``.

Both are Lance files (v2.x; Lance 0.1 files in pylance 0.10.x, see the section "Lance 0.1
files" below). Schema metadata says what they hold:

``index.idx``
    ``lance:index``  JSON ``{"type": "IVF_PQ" | "IVF_FLAT" | "IVF_SQ" | "IVF_HNSW_FLAT" |
                     "IVF_HNSW_SQ" | "IVF_HNSW_PQ", "distance_type": "l2" | "cosine" | "dot"}``
    ``lance:ivf``    the number of the global buffer holding the IVF message (with the
                     centroids)
    ``lance:flat``   (flat, PQ, SQ kinds) one empty text per partition; the file has a single
                     empty column ``__flat_marker``
    ``lance:hnsw``   (HNSW kinds) the graphs, see :mod:`reference_impl.index.vector.hnsw`

``auxiliary.idx`` (the storage: one row per indexed row, partition after partition)
    ``distance_type``     as above
    ``lance:ivf``         global buffer of the IVF message whose lengths are the partitions'
                          row counts
    ``storage_metadata``  JSON list of one JSON text: ``{"dim"}`` (flat), ``{"dim",
                          "num_bits", "bounds": {"start", "end"}}`` (SQ), ``{"codebook_position",
                          "nbits", "num_sub_vectors", "dimension", "transposed"}`` (PQ: the
                          codebook Tensor is global buffer ``codebook_position``, or, in
                          0.2x releases, its protobuf bytes as the JSON list
                          ``codebook_tensor``)
    columns               ``_rowid: uint64`` and ``flat`` / ``__sq_code`` / ``__pq_code``

IVF_RQ (RaBitQ, pylance 11.0.0 to 14.0.2): ``auxiliary.idx`` holds ``_rabit_codes`` (one bit
per rotated dimension, packed), ``__add_factors``, ``__scale_factors``, ``__error_factors``
and, with more than one bit, ``__blocked_ex_codes`` and their factors; ``storage_metadata``
``{"rotate_mat_position", "fast_rotation_signs", "rotation_type", "code_dim", "num_bits",
"packed", "query_estimator"}``; see :mod:`reference_impl.index.vector.rq` for the codes, their
layouts and the factors.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex
from reference_impl.index.vector import hnsw as hnsw_mod
from reference_impl.index.vector import ivf as ivf_mod
from reference_impl.index.vector import pq as pq_mod
from reference_impl.index.vector import rq as rq_mod
from reference_impl.index.vector import sq as sq_mod
from reference_impl.index.vector.ivf import RULE_LAYOUT

KNOWN_TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ",
               "IVF_RQ")
STORAGE_COLUMNS = {"flat": "FLAT", "__pq_code": "PQ", "__sq_code": "SQ", "_rabit_codes": "RQ"}


def _meta(reader) -> dict[str, bytes]:
    return {k.decode() if isinstance(k, bytes) else k: v
            for k, v in dict(reader.container.descriptor.schema.metadata).items()}


def _json(raw, what: str, path: str):
    try:
        return json.loads(raw)
    except (ValueError, TypeError) as exc:
        raise FormatError(f"{what} is not JSON: {exc}", rule=RULE_LAYOUT, path=path) from None


def _ivf_buffer(reader, meta: dict, path: str) -> ivf_mod.Ivf:
    try:
        pos = int(meta["lance:ivf"])
    except (KeyError, ValueError):
        raise UnsupportedIndex(f"{path} has no lance:ivf buffer number", kind="vector",
                               version="lance-file", path=path) from None
    return ivf_mod.parse(reader.container.read_global_buffer(pos), path=path)


def read(files) -> dict:
    """Decode the two files into the parts :func:`reference_impl.index.vector.read`
    assembles."""
    index = files.lance_file("index.idx")
    aux = files.lance_file("auxiliary.idx")
    ipath, apath = files.key("index.idx"), files.key("auxiliary.idx")
    if index.legacy is not None or aux.legacy is not None:
        if index.legacy is None or aux.legacy is None:
            raise UnsupportedIndex("index.idx and auxiliary.idx are of different Lance file "
                                   "versions", kind="vector", version="lance-file/mixed",
                                   path=ipath)
        return _read_legacy_files(files, index, aux, ipath, apath)
    imeta, ameta = _meta(index), _meta(aux)
    if "lance:index" not in imeta:
        raise UnsupportedIndex("index.idx has no lance:index metadata: a Lance-file vector "
                               "layout this reader does not know", kind="vector",
                               version="lance-file/unlabelled", path=ipath)
    desc = _json(imeta["lance:index"], "lance:index", ipath)
    sub_index = str(desc.get("type", "")).upper()
    if sub_index not in KNOWN_TYPES:
        raise UnsupportedIndex(f"vector index type {sub_index!r} is not read", kind="vector",
                               version=f"lance-file/{sub_index}", path=ipath)
    metric = str(desc.get("distance_type", ameta.get("distance_type", b"l2")
                          if isinstance(ameta.get("distance_type"), str)
                          else (ameta.get("distance_type") or b"l2").decode())).lower()
    centre_ivf = _ivf_buffer(index, imeta, ipath)
    store_ivf = _ivf_buffer(aux, ameta, apath)
    if centre_ivf.centroids is None:
        raise FormatError("index.idx's IVF holds no centroids", rule=RULE_LAYOUT, path=ipath)
    storage_texts = _json(ameta.get("storage_metadata", b"[]"), "storage_metadata", apath)
    if not isinstance(storage_texts, list) or len(storage_texts) != 1:
        raise UnsupportedIndex(f"storage_metadata with {len(storage_texts)} entries is not read",
                               kind="vector", version=f"lance-file/{sub_index}", path=apath)
    smeta = storage_texts[0]
    smeta = _json(smeta, "storage_metadata entry", apath) if isinstance(smeta, str) else smeta
    return _assemble(index, aux, ipath, apath, sub_index=sub_index, metric=metric,
                     centre_ivf=centre_ivf, store_ivf=store_ivf, smeta=smeta,
                     codebook=lambda pos: aux.container.read_global_buffer(pos),
                     hnsw_raw=imeta.get("lance:hnsw"))


def _assemble(index, aux, ipath: str, apath: str, *, sub_index: str, metric: str,
              centre_ivf, store_ivf, smeta: dict, codebook, hnsw_raw) -> dict:
    """The parts of either layout once its metadata is read: the storage rows of
    ``auxiliary.idx`` (row ids, partitions, vectors or codes), the quantizer of ``smeta``
    (``codebook(position)`` gives a PQ codebook's Tensor bytes) and, for HNSW kinds, the
    graphs of ``index.idx`` under the per-partition parameters ``hnsw_raw``."""
    names = [f.name for f in aux.schema]
    storage = [STORAGE_COLUMNS[n] for n in names if n in STORAGE_COLUMNS]
    if "_rowid" not in names or len(storage) != 1 or not sub_index.endswith(storage[0]):
        raise UnsupportedIndex(f"auxiliary.idx columns {names} are not a {sub_index} storage",
                               kind="vector", version=f"lance-file/{sub_index}", path=apath)
    table = aux.read_all()
    rowid = table.column("_rowid")
    if not pa.types.is_integer(rowid.type):
        raise FormatError(f"auxiliary.idx's _rowid column is {rowid.type}, not an integer",
                          rule=RULE_LAYOUT, path=apath)
    lengths = store_ivf.lengths
    n = table.num_rows
    # partition lengths that do not sum to the rows are judged (INDEX-140), not refused: the
    # rows past the last partition get the partition number P (no partition)
    partitions = np.repeat(np.arange(len(lengths), dtype=np.uint32), lengths.astype(np.int64))
    partitions = np.concatenate([partitions[:n], np.full(max(0, n - len(partitions)),
                                                         len(lengths), np.uint32)])
    parts = {
        "metric": metric, "sub_index": sub_index, "ivf": centre_ivf, "storage_ivf": store_ivf,
        "dimension": int(centre_ivf.centroids.shape[1]),
        "row_ids": table.column("_rowid").to_numpy(zero_copy_only=False).astype(np.uint64),
        "partitions": partitions,
        "storage_metadata": smeta,
    }
    kind = storage[0]
    if kind == "RQ":
        parts.update(_rabit_storage(table, smeta if isinstance(smeta, dict) else {},
                                    lengths, n, apath, codebook))
        q, dim = parts["rq"], parts["dimension"]
        if q.code_dim not in (dim, dim * q.num_bits):
            raise FormatError(f"RaBitQ code_dim {q.code_dim} fits neither the vectors' {dim} "
                              f"dimensions nor {dim} x num_bits {q.num_bits}",
                              rule=RULE_LAYOUT, path=apath)
        return parts
    col = table.column({"FLAT": "flat", "PQ": "__pq_code", "SQ": "__sq_code"}[kind])
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_fixed_size_list(col.type) or not (
            pa.types.is_integer(col.type.value_type) or pa.types.is_floating(col.type.value_type)):
        raise FormatError(f"auxiliary.idx's {kind} column is {col.type}, not a fixed-size list "
                          "of numbers", rule=RULE_LAYOUT, path=apath)
    width = col.type.list_size
    values = col.flatten().to_numpy(zero_copy_only=False).reshape(n, width)
    if kind == "FLAT":
        parts["vectors"] = values
    elif kind == "SQ":
        try:
            bounds = smeta["bounds"]
            parts["sq"] = sq_mod.ScalarQuantizer(int(smeta["num_bits"]), float(bounds["start"]),
                                                 float(bounds["end"]))
        except (KeyError, TypeError, ValueError):
            raise FormatError(f"SQ storage metadata (keys {_keys(smeta)}) lacks num_bits or "
                              "bounds", rule=RULE_LAYOUT, path=apath) from None
        parts["codes"] = values
    else:
        try:
            # the number of bits is "nbits" (pylance 0.26.1 on) or "num_bits" (0.20.0)
            bits = smeta["nbits"] if "nbits" in smeta else smeta["num_bits"]
            m, nbits = int(smeta["num_sub_vectors"]), int(bits)
            dim, pos = int(smeta["dimension"]), int(smeta["codebook_position"])
        except (KeyError, TypeError, ValueError):
            raise FormatError(f"PQ storage metadata (keys {_keys(smeta)}) lacks num_sub_vectors, "
                              "nbits, dimension or codebook_position", rule=RULE_LAYOUT,
                              path=apath) from None
        inline = smeta.get("codebook_tensor")
        if inline:
            # pylance 0.2x (seen: 0.26.1) keeps the Tensor's protobuf bytes in the JSON as a
            # list of byte values, and codebook_position 0
            try:
                raw = bytes(int(b) for b in inline)
            except (TypeError, ValueError):
                raise FormatError("storage_metadata codebook_tensor is not a list of bytes",
                                  rule=RULE_LAYOUT, path=apath) from None
        else:
            raw = codebook(pos)
        tensor = ivf_mod.parse_message(pq_mod_tensor(), raw, what="PQ codebook", path=apath)
        cb = ivf_mod.tensor_array(tensor, what="PQ codebook", path=apath)
        parts["pq"] = pq_mod.from_codebook(nbits, m, dim, cb, path=apath)
        if width != m:
            raise FormatError(f"__pq_code holds {width} codes per row, not {m}",
                              rule=RULE_LAYOUT, path=apath)
        parts["transposed"] = bool(smeta.get("transposed", False))
        parts["codes"] = pq_mod.untranspose(values, lengths, m) if parts["transposed"] else values
    if sub_index.startswith("IVF_HNSW"):
        graph_ivf = centre_ivf
        metas = hnsw_mod.parse_params(hnsw_raw, len(graph_ivf.lengths), path=ipath)
        gtable = index.read_all()
        parts["hnsw"] = hnsw_mod.graphs(gtable, graph_ivf.offsets, graph_ivf.lengths, metas,
                                        path=ipath)
    return parts


def _rabit_storage(table, smeta: dict, lengths, n: int, apath: str, buffer) -> dict:
    """The parts of an IVF_RQ storage: the quantiser (``rq``), the sign codes row by row
    (``codes``), the extended code values (``rq_ex``, more than one bit) and the factor
    columns (``rq_factors``); see :mod:`reference_impl.index.vector.rq`. ``buffer(position)``
    gives a global buffer's bytes (a matrix rotation's Tensor)."""
    q = rq_mod.from_metadata(smeta)
    names = set(table.column_names)
    if q.rotation_type == "matrix" and smeta.get("rotate_mat_position") is not None:
        try:
            raw = buffer(int(smeta["rotate_mat_position"]))
        except (TypeError, ValueError, IndexError, KeyError):
            raise FormatError(f"RaBitQ rotate_mat_position {smeta['rotate_mat_position']!r} "
                              "names no global buffer", rule=RULE_LAYOUT, path=apath) from None
        tensor = ivf_mod.parse_message(pq_mod_tensor(), raw, what="RaBitQ rotation",
                                       path=apath)
        matrix = ivf_mod.tensor_array(tensor, what="RaBitQ rotation", path=apath)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise FormatError(f"RaBitQ rotation of shape {list(matrix.shape)} is not square",
                              rule=RULE_LAYOUT, path=apath)
        q.set_rotation_matrix(matrix)

    def fixed(name: str, width: int) -> np.ndarray:
        col = table.column(name)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if (not pa.types.is_fixed_size_list(col.type) or col.type.list_size != width
                or not pa.types.is_uint8(col.type.value_type)):
            raise FormatError(f"auxiliary.idx's {name} column is {col.type}, not "
                              f"fixed_size_list<uint8>[{width}]", rule=RULE_LAYOUT, path=apath)
        return np.asarray(col.flatten().to_numpy(zero_copy_only=False)).reshape(n, width)

    if q.code_dim <= 0 or q.code_dim % 8 or not 1 <= q.num_bits <= 9:
        raise FormatError(f"RaBitQ storage metadata gives code_dim {q.code_dim} and num_bits "
                          f"{q.num_bits}", rule=RULE_LAYOUT, path=apath)
    codes = fixed("_rabit_codes", q.code_dim // 8)
    if q.packed:
        if int(np.sum(lengths)) != n:
            q.unjudged.append("its RaBitQ codes are not unpacked: the partitions' sizes do not "
                              "sum to its rows")
        else:
            codes = rq_mod.unpack_fast_scan(codes, lengths)
    out = {"rq": q, "codes": codes, "rq_factors": {}}
    if q.ex_bits:
        if "__blocked_ex_codes" not in names:
            raise UnsupportedIndex(f"RaBitQ storage of {q.num_bits} bits without "
                                   "__blocked_ex_codes", kind="vector",
                                   version="lance-file/IVF_RQ", path=apath)
        width = -(-q.code_dim // rq_mod.EX_BLOCK_DIMS) * rq_mod.EX_BLOCK_DIMS * q.ex_bits // 8
        out["rq_ex"] = rq_mod.unpack_blocked(fixed("__blocked_ex_codes", width), q.code_dim,
                                             q.ex_bits)
    for name in rq_mod.FACTOR_COLUMNS:
        if name in names:
            col = table.column(name)
            if not pa.types.is_floating(col.type):
                raise FormatError(f"auxiliary.idx's {name} column is {col.type}, not a float",
                                  rule=RULE_LAYOUT, path=apath)
            out["rq_factors"][name] = np.asarray(col.to_numpy(), dtype=np.float64)
    return out


# --------------------------------------------------------------------------- Lance 0.1 files
#
# pylance 0.10.x (seen: 0.10.18) writes IVF_HNSW_SQ / IVF_HNSW_PQ as the same two files in the
# legacy (0.1) Lance file format. Its manifest's schema metadata says what the v2 layout keeps
# in global buffers and ``storage_metadata``:
#
# ``index.idx``      ``lance:index``  as above; ``lance:ivf`` = ``{"pb_position": N}``: at byte N a
#                    u32 LE length, then the IVF message (centroids; offsets and lengths of each
#                    partition's graph rows); ``lance:ivf:partition``: the per-partition HNSW
#                    parameters of ``lance:hnsw``; one record batch per partition
# ``auxiliary.idx``  ``lance:index`` = ``{"type": "SQ" | "PQ", "distance_type"}``; ``lance:ivf``
#                    (pb_position, the IVF message of the storage's partition lengths);
#                    ``lance:sq`` = ``{"bounds": {"start", "end"}, "dim", "num_bits"}`` or
#                    ``lance:pq`` = ``{"codebook_position", "dimension", "num_bits",
#                    "num_sub_vectors"}``, the codebook Tensor a u32 LE length and its
#                    message at byte ``codebook_position``


def _legacy_meta(reader) -> dict[str, bytes]:
    return {str(k): (v.encode() if isinstance(v, str) else bytes(v))
            for k, v in dict(reader.legacy.manifest.schema_metadata).items()}


def _length_prefixed(store, key: str, size: int, position, what: str) -> bytes:
    """The message a legacy file keeps at ``position``: a u32 LE length, then that many bytes
    (both inside the file)."""
    try:
        pos = int(position)
    except (TypeError, ValueError):
        raise FormatError(f"{what} position {position!r} is not a number", rule=RULE_LAYOUT,
                          path=key) from None
    if not 0 <= pos <= size - 4:
        raise FormatError(f"{what} at byte {pos} lies outside the file's {size} bytes",
                          rule=RULE_LAYOUT, path=key, offset=max(pos, 0))
    length = int.from_bytes(store.get_range(key, pos, 4), "little")
    if length > size - pos - 4:
        raise FormatError(f"{what} at byte {pos} claims {length} bytes; the file has "
                          f"{size - pos - 4} after its length", rule=RULE_LAYOUT, path=key,
                          offset=pos)
    return bytes(store.get_range(key, pos + 4, length))


def _legacy_ivf(files, name: str, meta: dict, path: str) -> ivf_mod.Ivf:
    where = _json(meta.get("lance:ivf", b"null"), "lance:ivf", path)
    if not isinstance(where, dict) or "pb_position" not in where:
        raise UnsupportedIndex(f"{name} (Lance 0.1) has no lance:ivf pb_position", kind="vector",
                               version="lance-file-0.1", path=path)
    raw = _length_prefixed(files.store, files.key(name), files.size(name), where["pb_position"],
                           "the IVF message")
    return ivf_mod.parse(raw, path=path, back_to_back=True)


def _read_legacy_files(files, index, aux, ipath: str, apath: str) -> dict:
    """:func:`read` for pylance 0.10.x's IVF_HNSW_* in Lance 0.1 files (see above)."""
    imeta, ameta = _legacy_meta(index), _legacy_meta(aux)
    desc = _json(imeta.get("lance:index", b"null"), "lance:index", ipath)
    if not isinstance(desc, dict):
        raise UnsupportedIndex("index.idx (Lance 0.1) has no lance:index metadata",
                               kind="vector", version="lance-file-0.1", path=ipath)
    sub_index = str(desc.get("type", "")).upper()
    if sub_index not in KNOWN_TYPES or not sub_index.startswith("IVF_HNSW"):
        raise UnsupportedIndex(f"vector index type {sub_index!r} in Lance 0.1 files is not read",
                               kind="vector", version=f"lance-file-0.1/{sub_index}", path=ipath)
    metric = str(desc.get("distance_type", "l2")).lower()
    centre_ivf = _legacy_ivf(files, "index.idx", imeta, ipath)
    store_ivf = _legacy_ivf(files, "auxiliary.idx", ameta, apath)
    if centre_ivf.centroids is None:
        raise FormatError("index.idx's IVF holds no centroids", rule=RULE_LAYOUT, path=ipath)
    storage = sub_index.rsplit("_", 1)[1]  # FLAT, SQ or PQ
    smeta = {} if storage == "FLAT" else _json(ameta.get(f"lance:{storage.lower()}", b"null"),
                                               f"lance:{storage.lower()}", apath)
    if not isinstance(smeta, dict):
        raise FormatError(f"auxiliary.idx (Lance 0.1) has no lance:{storage.lower()} object",
                          rule=RULE_LAYOUT, path=apath)
    if storage == "PQ" and "dimension" not in smeta and "dim" in smeta:
        smeta = dict(smeta, dimension=smeta["dim"])
    parts = _assemble(index, aux, ipath, apath, sub_index=sub_index, metric=metric,
                      centre_ivf=centre_ivf, store_ivf=store_ivf, smeta=smeta,
                      codebook=lambda pos: _length_prefixed(files.store, apath,
                                                            files.size("auxiliary.idx"), pos,
                                                            "the PQ codebook"),
                      hnsw_raw=imeta.get("lance:ivf:partition"))
    parts["layout"] = "lance-file-0.1"
    return parts


def _keys(meta) -> str:
    """The keys of a storage metadata object, for a message of bounded length (its values may
    be a whole codebook)."""
    if not isinstance(meta, dict):
        return type(meta).__name__
    names = sorted(str(k)[:40] for k in meta)
    return ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")


def pq_mod_tensor():
    from reference_impl.proto import index_pb2

    return index_pb2.Tensor
