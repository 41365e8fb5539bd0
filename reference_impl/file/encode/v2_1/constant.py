"""Constant / all-null layout (``PageLayout`` field 2, FILE-ENCODINGS §3.4), all-null form.

Written when a page holds no valid value.

* Simple all-null: no repetition and the only def layer is the leaf item
  (``layers [NULLABLE_ITEM]``): no buffers at all.
* Complex all-null (null structs, null or empty lists...): the full layer list and two
  buffers ``[rep, def]`` of raw u16 levels; a kind that is absent is a size-0 buffer.

2.1 accepts only this all-null form with raw levels.
"""

from __future__ import annotations

import numpy as np

from ....proto import encodings_v2_1_pb2 as pb
from .repdef import Shredded


def encode_all_null(sh: Shredded) -> tuple[list[bytes], pb.PageLayout]:
    layout = pb.PageLayout()
    layout.constant_layout.SetInParent()
    layout.constant_layout.layers.extend(sh.layers)
    simple = sh.rep is None and list(sh.layers) == [pb.REPDEF_NULLABLE_ITEM]
    if simple:
        return [], layout
    rep = sh.rep.astype("<u2").tobytes() if sh.rep is not None else b""
    deff = sh.deff.astype("<u2").tobytes() if sh.deff is not None else b""
    return [rep, deff], layout
