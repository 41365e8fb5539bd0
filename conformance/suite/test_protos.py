"""The checked-in protobuf bindings are exactly what ``tools/gen_protos.py`` generates
from ``protos/*.proto``, and the protos carry the wire facts the kit depends on."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_protos", REPO / "tools" / "gen_protos.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bindings_match_protos(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools is needed to regenerate bindings")
    gen = _load_generator()
    gen.generate(tmp_path)
    checked_in = REPO / "reference_impl" / "proto"
    generated = sorted(p.name for p in tmp_path.iterdir())
    assert generated == sorted(p.name for p in checked_in.iterdir() if p.is_file() and p.suffix in (".py", ".pyi")), (
        "the set of generated files differs: run python tools/gen_protos.py"
    )
    drifted = [
        name for name in generated
        if (tmp_path / name).read_bytes() != (checked_in / name).read_bytes()
    ]
    assert drifted == [], f"bindings out of date for {drifted}: run python tools/gen_protos.py"


def test_every_proto_has_bindings():
    protos = {p.stem for p in (REPO / "protos").glob("*.proto")}
    bindings = {p.name[: -len("_pb2.py")] for p in (REPO / "reference_impl" / "proto").glob("*_pb2.py")}
    assert protos == bindings


def test_wire_facts_of_pylance_14():
    """Field numbers pylance 14.0.2 writes beyond the Nov-2025 tables (FACTS.md section B)."""
    from reference_impl.proto import table_pb2, transaction_pb2

    manifest = table_pb2.Manifest.DESCRIPTOR.fields_by_number
    assert manifest[23].name == "transaction_section"
    assert manifest[21].name == "transaction_section_spec"
    index = table_pb2.IndexMetadata.DESCRIPTOR.fields_by_number
    assert index[10].message_type.full_name == "lance.table.IndexFile"
    txn = transaction_pb2.Transaction.DESCRIPTOR
    assert txn.fields_by_number[105].message_type.fields_by_number[4].type == 8  # bool
    assert txn.fields_by_number[109].message_type.fields_by_number[2].type == 8  # bool
    ops = {f.number: f.name for f in txn.oneofs_by_name["operation"].fields}
    assert ops == {
        100: "append", 101: "delete", 102: "overwrite", 103: "create_index", 104: "rewrite",
        105: "merge", 106: "restore", 107: "reserve_fragments", 108: "update", 109: "project",
        110: "update_config", 111: "data_replacement", 112: "update_mem_wal_state", 113: "clone",
        114: "update_bases",
    }


def test_unknown_fields_survive_a_round_trip():
    """A reader must keep fields it does not know (e.g. DataFragment 11 written by newer
    pylance); protobuf's unknown-field set carries them through parse and serialize."""
    from reference_impl.proto import table_pb2

    frag = table_pb2.DataFragment(id=7, physical_rows=3)
    raw = frag.SerializeToString() + bytes([0x5A, 0x02, 0x08, 0x01])  # field 11, LEN, {1: 1}
    again = table_pb2.DataFragment.FromString(raw)
    assert again.id == 7
    assert again.SerializeToString() == raw
