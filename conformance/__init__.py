"""The Lance conformance kit: rules, validator engines, golden fixtures, the harness for
implementations under test, and the ``lance-conformance`` command."""

__version__ = "0.1.0"
