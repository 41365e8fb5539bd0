"""Tests of the concurrency and store checks (conformance/concurrency; lance-conformance stress, check-store)."""
