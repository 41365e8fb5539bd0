"""Tests of the rule catalog (conformance/rules) and its coverage."""
