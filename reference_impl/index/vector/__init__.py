"""Vector indexes: IVF partitions with a flat, PQ or SQ storage, and HNSW graphs over them.

The kind of :mod:`reference_impl.table.index` is ``vector`` for all of them; this package's
:func:`read` tells the sub-kind (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_HNSW_*; the legacy protobuf
``index.idx`` of releases up to 0.22 and the later Lance-file ``index.idx`` + ``auxiliary.idx``)
from the details and the files, and refuses what it does not know with ``UnsupportedIndex``.
"""

from __future__ import annotations

from reference_impl.errors import UnsupportedIndex

KIND = "vector"


def read(files, index):
    raise UnsupportedIndex("vector index content is not read by this implementation yet",
                           kind="vector")
