"""Decoders for the Lance file format 2.0 ``ArrayEncoding`` tree (FILE-ENCODINGS §2).

One module per node, named as the proto names it: :mod:`.flat`, :mod:`.nullable`,
:mod:`.list`, :mod:`.fixed_size_list`, :mod:`.struct`, :mod:`.binary`, :mod:`.dictionary`,
:mod:`.fsst`, :mod:`.packed_struct`, :mod:`.bitpacked`, :mod:`.constant`,
:mod:`.fixed_size_binary`. :mod:`.column` assembles a field's columns (a list takes an
offsets column plus its items, a struct a header column plus its children) into one
Arrow array; :func:`decode_page` decodes a single page's tree.
"""

from __future__ import annotations

from . import (  # noqa: F401  (each import registers its node decoder)
    binary,
    bitpacked,
    constant,
    dictionary,
    fixed_size_binary,
    fixed_size_list,
    flat,
    fsst,
    nullable,
    packed_struct,
    struct,
)
from ._common import DECODERS, PageContext
from ._common import decode as decode_page

__all__ = ["DECODERS", "PageContext", "decode_page"]

