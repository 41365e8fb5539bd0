"""Decoders of file version 2.3 (unstable, pylance 14.0.2's ``"2.3"``/``"next"``).

A 2.3 page is a :mod:`planar <.planar>` layout: a structural plane (dense rep/def levels or
:mod:`sparse <.sparse>` slot sets) paired with a value plane (chunked, zipped, constant or
none). Dense pages are byte-identical to 2.2 pages and are decoded by the ``v2_1`` modules;
sparse slot sets use the :mod:`sequence <.sequence>` encodings (``Range``, ``Delta``) that only
2.3 writes.
"""
