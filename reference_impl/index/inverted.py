"""INVERTED (full-text search) index: tokens of a text column, their postings and documents.

Two layouts are known.

**Single-file-set layout** (pylance up to the 0.1x releases, e.g. 0.18.2; no
``metadata.lance``)::

    tokens.lance   _token string, _token_id uint32           one row per distinct token
    invert.lance   _rowid uint64, _frequency float32,        one row per (token, row),
                   _position list<int32> (with positions)    grouped by token id
                   schema metadata "offsets": JSON list, the first invert row of each
                   token id; "max_scores": JSON list
    docs.lance     _rowid uint64, _num_tokens uint32          one row per document (row)

**Partitioned layout** (later releases up to 14.0.2)::

    metadata.lance          schema metadata "params" (tokenizer settings as JSON),
                            "partitions" (JSON list of partition ids), "token_set_format"
                            ("fst"), "format_version", posting/position codecs
    part_N_tokens.lance     the partition's token set (an FST of token -> token id)
    part_N_invert.lance     per token id: compressed posting blocks, max score, length,
                            positions (codec named in the metadata)
    part_N_docs.lance       _rowid uint64, _num_tokens uint32   one row per document

This reader decodes, for every layout, the documents (row ids and token counts), and for
the single-file-set layout the postings too. The partitioned layout's token FST and
compressed posting blocks are **not decoded** here: ``extra["postings"]`` is None and
``extra["postings_layout"]`` names the layout (its token set format and codecs), so a check
can hold only the documents against the data. An unknown file set is refused.

``entries`` has one row per document: ``row_id`` uint64, ``num_tokens`` uint32,
``partition`` int32. ``extra["postings"]`` (when decoded) is a table of (``token`` string,
``row_id`` uint64, ``frequency`` float32); ``extra["params"]`` the tokenizer settings the
metadata records (dict, or None).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "inverted"
#: Most documents and postings materialised.
MAX_ROWS = 1 << 28
_PART = re.compile(r"^part_(\d+)_(docs|invert|tokens)\.lance$")


def _docs(files, name: str, partition: int) -> pa.Table:
    reader = files.lance_file(name)
    if "_rowid" not in reader.schema.names or "_num_tokens" not in reader.schema.names:
        raise UnsupportedIndex(f"INVERTED documents file {name} has columns "
                               f"{reader.schema.names}, not _rowid and _num_tokens",
                               kind=KIND, version=",".join(reader.schema.names))
    if reader.num_rows > MAX_ROWS:
        raise FormatError(f"INVERTED {name} holds {reader.num_rows} documents, above "
                          f"{MAX_ROWS}", path=files.key(name))
    t = reader.read_columns(["_rowid", "_num_tokens"])
    return pa.table({"row_id": t.column("_rowid").cast(pa.uint64()),
                     "num_tokens": t.column("_num_tokens").cast(pa.uint32()),
                     "partition": pa.array(np.full(t.num_rows, partition, dtype=np.int32))})


def _json_list(raw: bytes | None, what: str, path: str) -> list:
    try:
        value = json.loads(raw) if raw is not None else None
    except (ValueError, UnicodeDecodeError):
        value = None
    if not isinstance(value, list):
        raise FormatError(f"INVERTED {what} metadata is not a JSON list", path=path)
    return value


def _legacy(files, index):
    from reference_impl.index import IndexContent

    docs = _docs(files, "docs.lance", 0)
    tokens = files.lance_file("tokens.lance").read_all()
    invert_reader = files.lance_file("invert.lance")
    if not {"_token", "_token_id"} <= set(tokens.column_names):
        raise UnsupportedIndex(f"INVERTED tokens.lance has columns {tokens.column_names}",
                               kind=KIND, version="legacy")
    if not {"_rowid", "_frequency"} <= set(invert_reader.schema.names):
        raise UnsupportedIndex(f"INVERTED invert.lance has columns "
                               f"{invert_reader.schema.names}", kind=KIND, version="legacy")
    path = files.key("invert.lance")
    if invert_reader.num_rows > MAX_ROWS:
        raise FormatError(f"INVERTED invert.lance holds {invert_reader.num_rows} postings",
                          path=path)
    offsets = _json_list((invert_reader.schema.metadata or {}).get(b"offsets"), "offsets", path)
    invert = invert_reader.read_columns(["_rowid", "_frequency"])
    n = invert.num_rows
    ids = tokens.column("_token_id").to_numpy(zero_copy_only=False).astype(np.int64)
    if len(offsets) != len(ids) or any(not isinstance(o, int) for o in offsets):
        raise FormatError(f"INVERTED offsets list {len(offsets)} entries for {len(ids)} tokens",
                          path=path)
    ends = offsets[1:] + [n]
    if any(not 0 <= a <= b <= n for a, b in zip(offsets, ends)):
        raise FormatError("INVERTED offsets are not ascending within invert.lance", path=path)
    by_id = dict(zip(ids.tolist(), tokens.column("_token").to_pylist()))
    if len(by_id) != len(ids) or set(by_id) != set(range(len(ids))):
        raise FormatError("INVERTED token ids are not 0..n-1, each once",
                          path=files.key("tokens.lance"))
    token_of_row = np.empty(n, dtype=object)
    for tid, (a, b) in enumerate(zip(offsets, ends)):
        token_of_row[a:b] = by_id[tid]
    postings = pa.table({"token": pa.array(token_of_row.tolist(), pa.string()),
                         "row_id": invert.column("_rowid").cast(pa.uint64()),
                         "frequency": invert.column("_frequency").cast(pa.float32())})
    summary = {"layout": "legacy", "documents": docs.num_rows, "tokens": len(ids),
               "postings": n}
    return IndexContent(kind=KIND, version="inverted-legacy", entries=docs, summary=summary,
                        extra={"postings": postings, "params": None,
                               "postings_layout": "legacy"})


def _partitioned(files, index):
    from reference_impl.index import IndexContent

    meta_reader = files.lance_file("metadata.lance")
    meta = meta_reader.schema.metadata or {}
    path = files.key("metadata.lance")
    params = None
    if b"params" in meta:
        try:
            params = json.loads(meta[b"params"])
        except ValueError:
            raise FormatError("INVERTED params metadata is not JSON", path=path) from None
    found: dict[int, set[str]] = {}
    for name in files.names():
        m = _PART.match(name)
        if m:
            found.setdefault(int(m.group(1)), set()).add(m.group(2))
    if b"partitions" in meta:
        parts = _json_list(meta[b"partitions"], "partitions", path)
    else:
        parts = sorted(found)
    incomplete = [p for p in parts if found.get(p) != {"docs", "invert", "tokens"}]
    if incomplete:
        raise FormatError(f"INVERTED partitions {incomplete} lack some of their files "
                          "(docs, invert, tokens)", path=path)
    docs = pa.concat_tables([_docs(files, f"part_{p}_docs.lance", p) for p in parts]) if parts \
        else pa.table({"row_id": pa.array([], pa.uint64()), "num_tokens": pa.array([], pa.uint32()),
                       "partition": pa.array([], pa.int32())})
    layout = {k.decode(): v.decode(errors="replace") for k, v in meta.items()
              if k in (b"token_set_format", b"format_version", b"posting_tail_codec",
                       b"positions_codec", b"positions_layout", b"posting_block_size")}
    summary = {"layout": "partitioned", "partitions": parts, "documents": docs.num_rows,
               "postings_decoded": False, **{k: v for k, v in layout.items()}}
    version = "inverted-partitioned/" + (layout.get("token_set_format") or "?") + "/v" + \
        (layout.get("format_version") or "1")
    return IndexContent(kind=KIND, version=version, entries=docs, summary=summary,
                        extra={"postings": None, "params": params, "postings_layout": layout})


def read(files, index):
    """Decode the documents (and, when known, the postings) of an INVERTED index."""
    names = set(files.names())
    if "metadata.lance" in names:
        return _partitioned(files, index)
    if {"tokens.lance", "invert.lance", "docs.lance"} <= names:
        return _legacy(files, index)
    raise UnsupportedIndex(f"INVERTED index {index.name!r} has files {sorted(names)}: no "
                           "known layout (metadata.lance + part_N_*, or tokens/invert/docs)",
                           kind=KIND)
