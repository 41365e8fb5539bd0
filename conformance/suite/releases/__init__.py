"""Tests of the cross-release corpus (conformance/releases) and of older releases' data shapes."""
