"""Tests of the object stores (reference_impl/io)."""
