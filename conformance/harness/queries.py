"""Queries of the golden cases with indexes: a filter, a k-nearest search or a full-text
match, and the verdict on an implementation's answer.

A query (``queries`` in a case.json, the ``query`` request of ``PROTOCOL.md``) is
``{"filter": SQL predicate}``, ``{"nearest": {"column", "q": [float], "k"}}`` or
``{"match": {"column", "query": text}}`` (a filter may go with either) over one version of a
table, asked with ``use_index`` true: the implementation may answer through the table's
index on that column. What it must answer is what a scan of the rows answers
(:func:`scan_answer`, the model's predicate evaluator; the ``k`` rows nearest to ``q`` by
squared L2 distance among those the filter matches; the rows holding any of the match's
terms, :func:`match_mask`). An **exact** query (a scalar index: BTREE, BITMAP, INVERTED ...)
must return exactly those rows, in any order; an **approximate** one (a vector index: IVF_PQ ...) must return rows
the table holds, each once, with the table's columns and types, at most ``k``, none the
filter (when there is one) does not match, and at least ``min_recall`` of the scan's ``k``
nearest (:func:`judge_answer`).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from . import scenarios as sc

ID = "id"


def terms(text: str) -> list[str]:
    """The terms of a full-text ``text``: its maximal runs of letters and digits, lower-cased
    (the ``simple`` tokenizer of an INVERTED index without stemming or stop words; a case
    picks query terms that every setting of the index's tokenizer keeps as they are)."""
    return [t.lower() for t in re.findall(r"[^\W_]+", text)]


def match_mask(rows: pa.Table, match: dict) -> pa.Array:
    """Which rows a full-text match holds for: the ``column``'s text (a null is no match)
    holds at least one of the ``query``'s terms (several terms are ORed, Lance's default)."""
    want = set(terms(match["query"]))
    texts = rows.column(match["column"]).to_pylist()
    return pa.array([t is not None and not want.isdisjoint(terms(t)) for t in texts], pa.bool_())


def request(query: dict, rows: pa.Table | None = None) -> dict:
    """The query as the protocol sends it: ``near_id`` (the case's way of naming ``q``: the
    vector of the row with that id) replaced by ``q`` taken from ``rows``."""
    out = {"filter": query.get("filter"), "nearest": None, "match": query.get("match"),
           "use_index": bool(query.get("use_index", True))}
    near = query.get("nearest")
    if near is not None:
        q = near.get("q")
        if q is None:
            hit = rows.filter(pa.compute.equal(rows[ID], near["near_id"]))
            q = [float(x) for x in hit[near["column"]][0].as_py()]
        out["nearest"] = {"column": near["column"], "q": q, "k": int(near["k"])}
    return out


def _distances(rows: pa.Table, column: str, q: list[float]) -> np.ndarray:
    vectors = np.array(rows[column].to_pylist(), dtype=np.float64).reshape(rows.num_rows, -1)
    return ((vectors - np.array(q, dtype=np.float64)) ** 2).sum(axis=1)


def scan_answer(rows: pa.Table, asked: dict) -> pa.Table:
    """What a scan of ``rows`` answers to the request ``asked`` (see :func:`request`)."""
    out = rows.filter(sc._mask(rows, asked["filter"])) if asked.get("filter") else rows
    if asked.get("match"):
        out = out.filter(match_mask(out, asked["match"]))
    near = asked.get("nearest")
    if near is not None:
        order = np.argsort(_distances(out, near["column"], near["q"]), kind="stable")
        out = out.take(pa.array(order[: near["k"]]))
    return out


def judge_answer(got: pa.Table, rows: pa.Table, asked: dict, query: dict) -> str | None:
    """None when ``got`` is a right answer to ``asked`` over ``rows``; else what is wrong."""
    want = scan_answer(rows, asked)
    got = got.drop_columns([c for c in ("_distance", "_score") if c in got.column_names])
    if query.get("exact", True):
        diff = sc.difference(got, want)
        return None if diff is None else f"the answer is not the scan's: {diff}"
    k = asked["nearest"]["k"]
    if got.num_rows > k:
        return f"{got.num_rows} rows for k={k}"
    columns = sc.difference(got.slice(0, 0), want.slice(0, 0))  # names, order and types
    if columns:
        return f"the answer's columns are not the table's: {columns}"
    ids = got[ID].to_pylist()
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        return f"rows answered more than once (ids {twice[:5]})"
    held = {r[ID]: r for r in rows.to_pylist()}
    foreign = [r.get(ID) for r in got.to_pylist() if held.get(r.get(ID)) != r]
    if foreign:
        return f"rows the table does not hold (ids {foreign[:5]})"
    if asked.get("filter"):
        matching = set(scan_answer(rows, dict(asked, nearest=None))[ID].to_pylist())
        unmatched = [i for i in ids if i not in matching]
        if unmatched:
            return f"rows the filter does not match (ids {unmatched[:5]})"
    found = set(got[ID].to_pylist()) & set(want[ID].to_pylist())
    recall = len(found) / max(1, want.num_rows)
    if recall < query["min_recall"]:
        return f"recall {recall:.2f} below the {query['min_recall']} the case states"
    return None
