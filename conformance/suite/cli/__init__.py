"""Tests of the lance-conformance commands that print datasets (conformance/cli: dump, inspect)."""
