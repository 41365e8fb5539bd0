"""Transactions (spec 001 "Committing Datasets"; FACTS §A "Transactions observed").

A transaction describes one commit: ``read_version`` (the version it was built on),
``uuid``, ``transaction_properties`` (the commit message sits under
``__lance_commit_message``) and exactly one operation of the ``operation`` oneof
(Append 100, Delete 101, Overwrite 102, CreateIndex 103, Rewrite 104, Merge 105,
Restore 106, ReserveFragments 107, Update 108, Project 109, UpdateConfig 110,
DataReplacement 111, UpdateMemWalState 112, Clone 113, UpdateBases 114).

It is stored twice by pylance 14: as a raw protobuf (no length prefix) in
``_transactions/{read_version}-{uuid}.txn`` and inline in the manifest file (see
``manifest.py``). An operation whose field number this implementation does not know is
kept by protobuf as an unknown field; :func:`operation_name` reports it as
``"unknown:<field number>"`` so that a committer can treat it as a conflict.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

from ..errors import FormatError
from ..io.base import ObjectStore
from ..proto import transaction_pb2
from . import layout

COMMIT_MESSAGE_KEY = "__lance_commit_message"
MAX_TRANSACTION_FILE = 1 << 30
FIRST_OPERATION_FIELD = 100


def parse_transaction(data: bytes, *, path: str | None = None) -> transaction_pb2.Transaction:
    """Decode raw Transaction bytes. Raises FormatError ``TXN-002`` on garbage."""
    txn = transaction_pb2.Transaction()
    try:
        txn.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError, RecursionError) as exc:
        raise FormatError(f"transaction protobuf does not parse: {exc}", rule="TXN-002",
                          path=path, offset=0) from None
    return txn


def read_transaction_file(store: ObjectStore, name: str) -> transaction_pb2.Transaction:
    """Read ``_transactions/{name}`` (``name`` may also be the full key)."""
    key = name if name.startswith(layout.TRANSACTIONS_DIR + "/") else f"{layout.TRANSACTIONS_DIR}/{name}"
    try:
        data = store.get(key, max_size=MAX_TRANSACTION_FILE)
    except FormatError as exc:
        raise FormatError(str(exc.message), rule="TXN-002", path=key) from None
    return parse_transaction(data, path=key)


def unknown_operation_fields(txn) -> list[int]:
    """Field numbers >= 100 that the transaction carries but this schema does not know."""
    from .manifest import _unknown_of

    return sorted({n for n, _wt, _b in _unknown_of(txn) if n >= FIRST_OPERATION_FIELD})


def operation_name(txn) -> str | None:
    """The oneof name (``"append"``...), ``"unknown:<n>"`` for an unknown operation, or None."""
    name = txn.WhichOneof("operation")
    if name is not None:
        return name
    unknown = unknown_operation_fields(txn)
    if unknown:
        return f"unknown:{unknown[0]}"
    return None


def commit_message(txn) -> str | None:
    """The commit message stored in ``transaction_properties``, if any."""
    return txn.transaction_properties.get(COMMIT_MESSAGE_KEY)


__all__ = ["COMMIT_MESSAGE_KEY", "commit_message", "operation_name", "parse_transaction",
           "read_transaction_file", "unknown_operation_fields"]
