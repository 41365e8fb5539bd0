"""``PackedStruct{bits_per_value[], values: flat(sum)}`` (FILE-ENCODINGS §4.11).

Rows are row-major: each row is the concatenation of the children's fixed-width values, child
``i`` occupying ``bits_per_value[i]/8`` bytes. Decoded as a :class:`Fixed` of the row width;
:func:`split` cuts the row matrix into per-child byte arrays.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from .values import Fixed

RULE = "ENC-015"


def row_bits(node) -> tuple[list[int], int]:
    widths = [int(b) for b in node.bits_per_value]
    if any(b % 8 or b <= 0 for b in widths):
        raise FormatError(f"packed struct child widths {widths} are not whole bytes", rule=RULE)
    if node.values.WhichOneof("compression") != "flat" or node.values.flat.bits_per_value != sum(widths):
        raise FormatError("packed struct values must be flat of the summed width", rule=RULE)
    return widths, sum(widths)


def split(values: Fixed, widths: list[int]) -> list[Fixed]:
    W = sum(widths) // 8
    n = len(values.data) // W if W else 0
    mat = values.data.reshape(n, W)
    out, pos = [], 0
    for b in widths:
        out.append(Fixed(np.ascontiguousarray(mat[:, pos:pos + b // 8]).reshape(-1), b))
        pos += b // 8
    return out
