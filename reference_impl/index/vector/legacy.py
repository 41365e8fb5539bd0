"""The legacy ``index.idx`` of early releases: a raw file with a protobuf ``Index`` footer.

Layout (file format 0.1 era; pylance up to 0.8.x wrote only this, later releases kept
writing it for IVF_PQ until they moved to the Lance-file layout)::

    partition 0 bytes | partition 1 bytes | ... | u32 LE length | Index protobuf |
    u64 LE position of the length | u16 major (0) | u16 minor (1) | "LANC"

    Index { 1 name, 2 columns, 3 dataset_version, 4 index_type (VECTOR),
            5 vector_index: VectorIndex { 1 spec_version, 2 dimension,
                                          3 stages: repeated VectorIndexStage,
                                          4 metric_type (0 L2, 1 cosine, 2 dot) } }

The stages this reader knows are ``[ivf, pq]``: IVF ``offsets`` are byte positions of the
partitions; partition ``i`` is ``lengths[i] x m`` PQ code bytes (row-major) followed by
``lengths[i]`` u64 LE row ids. Other stage lists (OPQ transforms, DiskANN) are refused.
"""

from __future__ import annotations

import struct

import numpy as np

from reference_impl.errors import FormatError, UnsupportedIndex
from reference_impl.index.vector import ivf as ivf_mod
from reference_impl.index.vector import pq as pq_mod
from reference_impl.index.vector.ivf import RULE_LAYOUT
from reference_impl.proto import index_pb2

MAGIC = b"LANC"
METRICS = {0: "l2", 1: "cosine", 2: "dot", 3: "hamming"}
MAX_FOOTER = 64 << 20


def is_legacy(store, key: str, size: int) -> bool:
    """Whether ``key`` ends like a legacy index file (magic and version 0.1)."""
    if size < 16:
        return False
    tail = store.get_range(key, size - 16, 16)
    _pos, major, minor = struct.unpack("<QHH", tail[:12])
    return tail[12:] == MAGIC and (major, minor) == (0, 1)


def read_footer(store, key: str, size: int):
    """The ``Index`` message of a legacy index file."""
    tail = store.get_range(key, size - 16, 16)
    pos = struct.unpack("<Q", tail[:8])[0]
    if pos + 4 > size - 16:
        raise FormatError(f"legacy index metadata position {pos} lies outside the file",
                          rule=RULE_LAYOUT, path=key, offset=size - 16)
    n = struct.unpack("<I", store.get_range(key, pos, 4))[0]
    if n > MAX_FOOTER or pos + 4 + n > size - 16:
        raise FormatError(f"legacy index metadata of {n} bytes at {pos} overruns the file",
                          rule=RULE_LAYOUT, path=key, offset=pos)
    msg = ivf_mod.parse_message(index_pb2.Index, store.get_range(key, pos + 4, n),
                                what="legacy index metadata", path=key)
    return msg, pos


def read(store, key: str, size: int) -> dict:
    """Decode a legacy IVF_PQ ``index.idx``: the parts :func:`reference_impl.index.vector.read`
    assembles (metric, ivf, pq, row ids, partitions, codes)."""
    msg, meta_pos = read_footer(store, key, size)
    if not msg.HasField("vector_index"):
        raise UnsupportedIndex("legacy index.idx holds no vector index", kind="vector",
                               version="legacy-pb", path=key)
    vi = msg.vector_index
    stages = [s.WhichOneof("stage") for s in vi.stages]
    if stages != ["ivf", "pq"]:
        raise UnsupportedIndex(f"legacy vector index with stages {stages} is not read (only "
                               "[ivf, pq])", kind="vector", version="legacy-pb/" + "+".join(
                                   str(s) for s in stages), path=key)
    dim = int(vi.dimension)
    ivf = ivf_mod.from_message(vi.stages[0].ivf, dimension=dim, path=key)
    pqm = vi.stages[1].pq
    if pqm.HasField("codebook_tensor") and pqm.codebook_tensor.shape:
        values = ivf_mod.tensor_array(pqm.codebook_tensor, what="PQ codebook", path=key)
    else:
        values = np.asarray(pqm.codebook, dtype=np.float32)
    pq = pq_mod.from_codebook(int(pqm.num_bits), int(pqm.num_sub_vectors),
                              int(pqm.dimension or dim), values, path=key)
    m = pq.num_sub_vectors
    rows, codes, parts = [], [], []
    for p, (off, length) in enumerate(zip(ivf.offsets.tolist(), ivf.lengths.tolist(), strict=False)):
        need = length * (m + 8)
        if off + need > meta_pos:
            raise FormatError(f"partition {p} ({length} rows at byte {off}) overruns the "
                              "partition data", rule=RULE_LAYOUT, path=key, offset=off)
        raw = store.get_range(key, off, need) if need else b""
        codes.append(np.frombuffer(raw, dtype=np.uint8, count=length * m).reshape(length, m))
        rows.append(np.frombuffer(raw, dtype="<u8", count=length, offset=length * m))
        parts.append(np.full(length, p, dtype=np.uint32))
    return {
        "metric": METRICS.get(int(vi.metric_type), f"metric {int(vi.metric_type)}"),
        "sub_index": "IVF_PQ", "dimension": dim, "ivf": ivf, "pq": pq,
        "row_ids": np.concatenate(rows) if rows else np.zeros(0, np.uint64),
        "partitions": np.concatenate(parts) if parts else np.zeros(0, np.uint32),
        "codes": np.concatenate(codes) if codes else np.zeros((0, m), np.uint8),
        "spec_version": int(vi.spec_version), "name": msg.name, "columns": list(msg.columns),
    }
