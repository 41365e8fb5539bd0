"""Tests of namespaces (reference_impl/namespace, conformance/engine/namespace.py, rules/namespace.py)."""
