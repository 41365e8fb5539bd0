"""Encoders for the pages of a Lance data file (spec 003, "File Encodings").

The writer hands each encoder the Arrow data of one page and gets back an
:class:`~reference_impl.file.encode.page.EncodedPage`: the page's buffers in order,
its ``length``, and the serialized ``google.protobuf.Any`` that goes into
``Page.encoding.direct.encoding``.

* ``v2_0/`` holds the array encodings of file version 2.0 (an ``ArrayEncoding`` tree
  per page, one column per field including list and struct parents).
* ``v2_1/`` holds the structural layouts of versions 2.1 and 2.2 (mini-block,
  full-zip, constant) and the ``CompressiveEncoding`` nodes they nest (flat,
  variable, bit-packing, dictionary, general), one column per leaf field.

Which encoding applies when is decided in :mod:`reference_impl.file.selection`.
"""
