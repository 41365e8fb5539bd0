"""TXN-*: the transaction of each version (spec 000 "Transaction Files", 004, FACTS §A).

``Manifest.transaction_file`` names ``_transactions/{read_version}-{uuid}.txn``, a raw
``lance.table.Transaction`` protobuf (no length prefix). The same bytes are stored inline
in the manifest (offset in field 23). ``read_version`` is the version the transaction was
built from: below the new version, except for a Clone, whose first version equals the
source version it read. The operation is one of the known ``oneof operation`` members.
"""

from __future__ import annotations

import re

from reference_impl.errors import FormatError, NotFound
from reference_impl.io.base import join_key

from .registry import Finding, rule

TXN_NAME = re.compile(r"^(\d+)-([0-9a-fA-F-]{32,36})\.txn$")
KNOWN_OPERATIONS = {
    "append", "delete", "overwrite", "create_index", "rewrite", "merge", "restore",
    "reserve_fragments", "update", "project", "update_config", "data_replacement",
    "update_mem_wal_state", "clone", "update_bases",
}


def txn_file(ctx):
    """``(key, Transaction | None, raw | None, error | None)`` of the version's .txn file."""
    from conformance.engine import access

    if "txn" in ctx.cache:
        return ctx.cache["txn"]
    name = ctx.manifest.transaction_file
    out = (None, None, None, None)
    if name:
        key = None
        try:
            key = join_key("_transactions", name)
            txn, raw = access.read_transaction_file(ctx.store, key)
            out = (key, txn, raw, None)
        except (FormatError, NotFound) as exc:
            out = (key, None, None, exc)
    ctx.cache["txn"] = out
    return out


def _transaction(ctx):
    key, txn, _raw, _err = txn_file(ctx)
    if txn is not None:
        return txn
    return getattr(ctx.mf, "transaction", None)


@rule("TXN-001", title="the transaction file exists", severity="warning", spec="004",
      section="Manifest",
      clause="Path to the transaction file, relative to `{root}/_transactions`. The file at "
             "that location contains a wire-format serialized Transaction message",
      pylance="cleanup_old_versions keeps a branch-protected version's manifest but deletes "
              "its .txn file, so a missing file is only a warning", enforces="pylance")
def exists(ctx):
    key, _txn, _raw, err = txn_file(ctx)
    if isinstance(err, NotFound):
        yield Finding(f"transaction file {ctx.manifest.transaction_file} does not exist",
                      {"path": key or ctx.manifest.transaction_file})


@rule("TXN-002", title="the transaction file parses", severity="error", spec="004",
      section="Manifest",
      clause="The file at that location contains a wire-format serialized Transaction message "
             "representing the transaction that created this version.")
def parses(ctx):
    key, _txn, _raw, err = txn_file(ctx)
    if isinstance(err, FormatError):
        yield Finding(err.message, {"path": key or ctx.manifest.transaction_file,
                                    "offset": err.offset})


@rule("TXN-003", title="the inline transaction is the same transaction as the .txn file",
      severity="error", spec="FACTS", section="Manifest file framing (`_versions/*.manifest`)",
      clause="The inline transaction is byte-identical to the `.txn` file.",
      refusal="two different transactions for one version: conflict checks would depend on "
              "which copy a writer reads",
      releases="pylance 4.x to 9.x serialize the two copies separately and protobuf maps (field "
               "metadata) come out in either order, so the bytes may differ while the messages "
               "are equal: the copies are compared as messages")
def inline_equal(ctx):
    key, txn, raw, _err = txn_file(ctx)
    inline = getattr(ctx.mf, "transaction_bytes", None)
    if raw is None or inline is None or bytes(raw) == bytes(inline):
        return
    other = getattr(ctx.mf, "transaction", None)
    if txn is not None and other is not None and txn == other:
        return  # the same message, its map entries in another order
    yield Finding(f"inline transaction ({len(inline)} bytes) differs from {key} "
                  f"({len(raw)} bytes)", {"path": key})


@rule("TXN-004", title="read_version is below the version (a Clone's equals it)",
      severity="error", spec="000", section="Transaction Files",
      clause="Where read_version is the table version the transaction was built from.")
def read_version(ctx):
    txn = _transaction(ctx)
    if txn is None:
        return
    v, rv = int(ctx.manifest.version), int(txn.read_version)
    op = txn.WhichOneof("operation")
    if v >> 63:
        return  # detached versions are random numbers
    if op == "clone":
        if rv != v:
            yield Finding(f"Clone transaction read version {rv} differs from version {v}",
                          {"path": ctx.manifest_key})
    elif rv >= v:
        yield Finding(f"transaction read_version {rv} is not below version {v}",
                      {"path": ctx.manifest_key})


@rule("TXN-005", title="the .txn name agrees with its contents", severity="error",
      spec="000", section="Transaction Files",
      clause="Pattern: _transactions/{read_version}-{uuid}.txn")
def name_matches(ctx):
    name = ctx.manifest.transaction_file
    if not name:
        return
    m = TXN_NAME.match(name)
    if not m:
        yield Finding(f"transaction file name {name!r} is not {{read_version}}-{{uuid}}.txn",
                      {"path": name})
        return
    txn = _transaction(ctx)
    if txn is None:
        return
    if int(m.group(1)) != int(txn.read_version):
        yield Finding(f"name says read version {m.group(1)}, transaction says "
                      f"{txn.read_version}", {"path": name})
    if txn.uuid and txn.uuid != m.group(2):
        yield Finding(f"name says uuid {m.group(2)}, transaction says {txn.uuid}",
                      {"path": name})


@rule("TXN-006", title="the transaction has a known operation", severity="error",
      spec="FACTS", section="C. How upstream decides transaction conflicts (Nov-2025 source)",
      clause="Missing or unknown transaction => conflict (spec).",
      refusal='a writer cannot check a concurrent commit against an unknown operation; the spec treats it as a conflict')
def known_operation(ctx):
    for where, txn in (("inline", getattr(ctx.mf, "transaction", None)),
                       ("file", txn_file(ctx)[1])):
        if txn is None:
            continue
        op = txn.WhichOneof("operation")
        if op not in KNOWN_OPERATIONS:
            yield Finding(f"{where} transaction has no known operation{_newer(txn)}", {
                "path": ctx.manifest_key if where == "inline" else ctx.manifest.transaction_file})


#: Transaction fields of operations newer than the kit's protos (FACTS §1: "Transaction 115
#: DataOverlay"), named in TXN-006's finding
NEWER_OPERATIONS = {115: "DataOverlay (pylance 14's LanceOperation.DataOverlay)"}


def _newer(txn) -> str:
    from reference_impl.table.manifest import _unknown_of

    numbers = sorted({num for num, _wt, _raw in _unknown_of(txn)})
    if not numbers:
        return ""
    named = [f"{n}: {NEWER_OPERATIONS[n]}" if n in NEWER_OPERATIONS else str(n) for n in numbers]
    return f" (unknown field {', '.join(named)})"


@rule("TXN-007", title="the read_version in a .txn name has no padding digits",
      severity="warning", spec="004", section="Manifest",
      clause="{read_version} is the version of the table the transaction read from "
             "(serialized to decimal with no padding digits)")
def name_unpadded(ctx):
    """``Manifest.transaction_file``'s leading number is written as ``str(read_version)``:
    ``05-...`` names the same version as ``5-...`` but is not the name a reader derives."""
    match = TXN_NAME.match(ctx.manifest.transaction_file or "")
    if match and match.group(1) != str(int(match.group(1))):
        yield Finding(f"transaction_file {ctx.manifest.transaction_file!r} pads its "
                      f"read_version with zeros", {"path": ctx.manifest.transaction_file})
