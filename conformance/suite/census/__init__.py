"""Tests of the census (conformance/census/)."""
