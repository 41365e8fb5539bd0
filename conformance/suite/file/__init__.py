"""Tests of the file format (reference_impl/file): the container, the 2.0/2.1/2.3 encodings, the writer, random access."""
