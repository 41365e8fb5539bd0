"""Tests of the compatibility matrix (conformance/compat; lance-conformance compat)."""
