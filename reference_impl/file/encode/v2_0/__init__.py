"""File version 2.0 array encodings: each page is an ``ArrayEncoding`` tree whose
``Flat`` leaves name page buffers by index (``Buffer{buffer_index, buffer_type: page}``).

Buffer indices are handed out depth-first as the tree is built: a validity bitmap
before its values, Binary indices before bytes, dictionary indices before the items'
buffers, an FSL's outer validity before the item validity and item values.
"""
