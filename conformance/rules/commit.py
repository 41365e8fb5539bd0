"""COMMIT-*: the version history left by commits (spec 001 "Committing Datasets").

Each commit writes one new manifest; version numbers are unique and start at 1. The history
need not be contiguous: ``cleanup_old_versions`` removes old manifests and leaves gaps
(REFS-NAMESPACE-COMMIT §5), so a gap is never reported. Timestamps should not go backwards.
"""

from __future__ import annotations

import json
from collections import Counter

from .registry import Finding, rule


@rule("COMMIT-001", title="each version has one manifest", severity="error", spec="001",
      section="Committing Datasets",
      clause="If two writers try to commit at the same time, one will succeed and the other "
             "will fail.", scope="table")
def unique_versions(ctx):
    counts = Counter(e.version for e in ctx.version_entries)
    for v, n in sorted(counts.items()):
        if n > 1:
            keys = sorted(e.key for e in ctx.version_entries if e.version == v)
            yield Finding(f"version {v} has {n} manifests: {', '.join(keys)}",
                          {"version": v, "path": keys[0]})


@rule("COMMIT-002", title="timestamps do not go backwards", severity="warning",
      spec="004", section="Manifest", clause="Version creation Timestamp, UTC timezone",
      scope="table")
def timestamps(ctx):
    prev = None
    for e in ctx.selected_entries():
        if e.scheme == "detached":
            continue
        facts = ctx.version_facts(e.version)
        if facts is None or facts.timestamp_ns is None:
            continue
        ts = facts.timestamp_ns
        if prev is not None and ts < prev[1]:
            yield Finding(f"version {e.version} is older than version {prev[0]}",
                          {"version": e.version, "path": e.key})
        prev = (e.version, ts)


@rule("COMMIT-003", title="version numbers start at 1", severity="error", spec="FACTS",
      section="Manifest file framing (`_versions/*.manifest`)",
      clause="the first commit reads version 0", scope="table",
      refusal='a manifest of version 0 collides with the empty table every commit protocol starts from: no release writes one and readers cannot order it')
def no_version_zero(ctx):
    for e in ctx.version_entries:
        if e.version == 0:
            yield Finding(f"{e.key} names version 0", {"version": 0, "path": e.key})


@rule("COMMIT-004", title="latest_version_hint.json is well formed", severity="warning",
      spec="REFS-NAMESPACE-COMMIT", section="7. Version discovery edge cases",
      clause="Written after every successful commit on the local FS ... as compact "
             "{\"version\":N}", scope="table")
def version_hint(ctx):
    key = "_versions/latest_version_hint.json"
    try:
        raw = ctx.store.get(key, max_size=1 << 16)
    except Exception:  # noqa: BLE001 - absent (or unreadable) hints are allowed
        return
    try:
        doc = json.loads(raw)
        ok = isinstance(doc, dict) and isinstance(doc.get("version"), int) and \
            not isinstance(doc.get("version"), bool)
    except (ValueError, UnicodeDecodeError):
        ok = False
    if not ok:
        yield Finding("latest_version_hint.json is not {\"version\": <integer>}",
                      {"path": key})


@rule("COMMIT-005", title="every version asked for exists", severity="error",
      spec="REFS-NAMESPACE-COMMIT", section="7. Version discovery edge cases",
      clause="a specific version | HEAD the V2 name, then fall back to the V1 name.",
      scope="table",
      refusal='a version without a manifest cannot be opened')
def requested_exist(ctx):
    have = {e.version for e in ctx.version_entries}
    for v in ctx.selected_versions:
        if v not in have:
            yield Finding(f"version {v} was asked for but has no manifest", {"version": v})
