"""The Lance-file layout of a vector index: ``index.idx`` + ``auxiliary.idx``.

Both are Lance files (v2.x). Schema metadata says what they hold:

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
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex
from reference_impl.index.vector import hnsw as hnsw_mod
from reference_impl.index.vector import ivf as ivf_mod
from reference_impl.index.vector import pq as pq_mod
from reference_impl.index.vector import sq as sq_mod
from reference_impl.index.vector.ivf import RULE_LAYOUT

KNOWN_TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ")
STORAGE_COLUMNS = {"flat": "FLAT", "__pq_code": "PQ", "__sq_code": "SQ"}


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
        # pylance 0.10.x wrote its IVF_HNSW_* files as Lance 0.1 files: the IVF message at a
        # byte position ("lance:ivf" = {"pb_position": N}), the graphs' parameters under
        # "lance:ivf:partition" and the SQ bounds under "lance:sq" of the embedded manifest
        raise UnsupportedIndex("a vector index in Lance 0.1 files (index.idx + auxiliary.idx "
                               "with lance:ivf pb_position, pylance 0.10.x IVF_HNSW_*) is not "
                               "read", kind="vector", version="lance-file-0.1", path=ipath)
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
    names = [f.name for f in aux.schema]
    storage = [STORAGE_COLUMNS[n] for n in names if n in STORAGE_COLUMNS]
    if "_rowid" not in names or len(storage) != 1 or not sub_index.endswith(storage[0]):
        raise UnsupportedIndex(f"auxiliary.idx columns {names} are not a {sub_index} storage",
                               kind="vector", version=f"lance-file/{sub_index}", path=apath)
    table = aux.read_all()
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
    col = table.column({"FLAT": "flat", "PQ": "__pq_code", "SQ": "__sq_code"}[kind])
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
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
            raw = aux.container.read_global_buffer(pos)
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
        metas = hnsw_mod.parse_params(imeta.get("lance:hnsw"), len(graph_ivf.lengths), path=ipath)
        gtable = index.read_all()
        parts["hnsw"] = hnsw_mod.graphs(gtable, graph_ivf.offsets, graph_ivf.lengths, metas,
                                        path=ipath)
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
