"""2.0 "Basic struct" field encoding: a header column, then the children's columns.

The header column holds exactly one page covering every value of the struct
(``length`` = rows, or items for a struct inside a list), encoded as ``struct {}``
(``SimpleStruct``) with no buffers. 2.0 has no struct validity: a null struct is
refused, as pylance 14.0.2 refuses it ("does not encode struct validity").
"""

from __future__ import annotations

import pyarrow as pa

from ....errors import UnsupportedFeature
from ....proto import encodings_v2_0_pb2 as pb


def check_struct_validity(arr: pa.Array, name: str) -> None:
    if arr.null_count:
        raise UnsupportedFeature(f"field {name!r}: {arr.type} has {arr.null_count} null rows; "
                                 f"file version 2.0 cannot store null structs (pylance 14.0.2: "
                                 f"\"does not encode struct validity\")")


def struct_header_node() -> pb.ArrayEncoding:
    node = pb.ArrayEncoding()
    node.struct.SetInParent()
    return node
