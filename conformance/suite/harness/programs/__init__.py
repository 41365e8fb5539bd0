"""Small programs speaking ``PROTOCOL.md`` with one fault each, driven through ``cmd:`` by
``conformance/suite/harness/test_verdicts.py``: a reader that cannot find tables, one
that aborts itself on a chosen case, one that panics where it should refuse, one without
time travel. Each reads with the reference implementation (:mod:`.loop`) but for its fault."""
