"""ENGINE-*: findings the validation engine itself makes.

These rules have no check of their own: the engine (``conformance/engine/local.py``)
emits them when a check raises (ENGINE-001) or the per-dataset time limit runs out
(ENGINE-002). They are in the catalog so that reports, skip files and ``rules`` name them.
"""

from __future__ import annotations

from .registry import rule


@rule("ENGINE-001", title="every rule could be evaluated", severity="error", spec="FACTS",
      section="A. What pylance 14.0.2 writes (observed byte by byte)",
      clause="(engine) A check that raises is reported as a finding naming the rule and the "
             "exception; the dataset is not declared conforming.",
      scope="table")
def check_engine_exception(ctx):
    return ()


@rule("ENGINE-002", title="validation finished within the time limit", severity="error",
      spec="FACTS", section="A. What pylance 14.0.2 writes (observed byte by byte)",
      clause="(engine) With a per-dataset time limit, a run that does not finish in time is "
             "reported with the checks done so far and this finding.",
      scope="table")
def check_engine_timeout(ctx):
    return ()
