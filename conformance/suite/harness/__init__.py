"""Tests of the harness (conformance/harness): adapters, the runner, known-bad writers, fuzz."""
