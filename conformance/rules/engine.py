"""ENGINE-*: findings the validation engine itself makes.

These rules have no check of their own: the engine (``conformance/engine/local.py``)
emits them when a check raises (ENGINE-001), the per-dataset time limit runs out
(ENGINE-002) or a check runs out of memory (ENGINE-003). They are in the catalog so that
reports, skip files and ``rules`` name them. None of them says anything of the dataset's
bytes: each says the validator reached no verdict on part of it.
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


@rule("ENGINE-003", title="every check had the memory it needed", severity="error",
      spec="FACTS", section="A. What pylance 14.0.2 writes (observed byte by byte)",
      clause="(engine) A check that runs out of memory (MemoryError) is reported as not "
             "checked, naming the file or table it was reading; it is no finding of any format "
             "rule, and the dataset is not declared conforming.",
      scope="table")
def check_engine_memory(ctx):
    return ()
