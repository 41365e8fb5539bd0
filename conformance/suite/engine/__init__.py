"""Tests of the validation engine and its report (conformance/engine, lance-conformance validate)."""
