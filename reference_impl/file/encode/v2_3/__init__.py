"""Writing 2.3 pages (``/lance.encodings23.PlanarLayout``): see :mod:`.planar`."""
