"""Spec 000 "File Naming Conventions" and REFS §1-3 names: reference_impl.table.layout."""

from __future__ import annotations

import os
import uuid

import pytest

from reference_impl.errors import InvalidInput
from reference_impl.table import layout

U64 = (1 << 64) - 1


def test_manifest_names_v1_v2_detached():
    assert layout.manifest_name_v1(5) == "5.manifest"
    assert layout.manifest_name_v2(1) == "18446744073709551614.manifest"
    assert layout.manifest_name_v2(U64) == "00000000000000000000.manifest"
    assert len(layout.manifest_name_v2(1)) == 29
    assert layout.detached_manifest_name(17914233578933673914) == "d17914233578933673914.manifest"
    with pytest.raises(InvalidInput):
        layout.manifest_name_v1(-1)
    with pytest.raises(InvalidInput):
        layout.manifest_name_v2(U64 + 1)


@pytest.mark.parametrize("name,expected", [
    ("18446744073709551614.manifest", (1, "v2")),
    ("00000000000000000000.manifest", (U64, "v2")),
    ("1.manifest", (1, "v1")),
    ("18446744073709551614.manifes", None),
    ("123456789012345678901.manifest", None),   # 21 digits, above u64
    ("99999999999999999999.manifest", None),    # 29 characters but not a u64
    ("zzz.manifest", None),
    ("foo.txt", None),
    ("latest_version_hint.json", None),
    ("18446744073709551614.manifest-0b1e4f7a-1111-2222-3333-444455556666", None),
    ("18446744073709551614.manifest#1", None),
    ("d17914233578933673914.manifest", (17914233578933673914, "detached")),
    ("dx.manifest", None),
    (".manifest", None),
    ("-1.manifest", None),
    ("+1.manifest", None),
    ("١.manifest", None),  # a non-ASCII digit
])
def test_parse_manifest_name(name, expected):
    assert layout.parse_manifest_name(name) == expected


def test_parse_manifest_name_round_trips():
    for v in (1, 2, 10, 999, 2**40, U64 - 1):
        assert layout.parse_manifest_name(layout.manifest_name_v2(v)) == (v, "v2")
        if len(str(v)) < 20:
            assert layout.parse_manifest_name(layout.manifest_name_v1(v)) == (v, "v1")
        else:  # a 20-digit V1 name cannot be told from a V2 name: the 29-character rule wins
            assert layout.parse_manifest_name(layout.manifest_name_v1(v)) == (U64 - v, "v2")


def test_data_file_name_spec_shape():
    raw = bytes(range(16))
    name = layout.data_file_name(raw)
    assert name == "000000000000000100000010" + raw[3:].hex() + ".lance"
    assert len(name) == 56 and layout.is_data_file_name(name)
    assert layout.data_file_uuid(name) == raw
    assert not layout.is_data_file_name("fragment-0.lance")
    assert not layout.is_data_file_name(name.replace(".lance", ".txt"))
    with pytest.raises(InvalidInput):
        layout.data_file_name(b"short")


def test_deletion_and_transaction_names():
    assert layout.deletion_file_name(42, 10, 7, 0) == "42-10-7.arrow"
    assert layout.deletion_file_name(42, 10, 7, "bin") == "42-10-7.bin"
    assert layout.parse_deletion_file_name("42-10-7.arrow") == (42, 10, 7, 0)
    assert layout.parse_deletion_file_name("0-2-13150293694926800635.bin") == (0, 2, 13150293694926800635, 1)
    assert layout.parse_deletion_file_name("42-10-a1b2.arrow") is None
    assert layout.parse_deletion_file_name("42-10-7.parquet") is None
    with pytest.raises(InvalidInput):
        layout.deletion_file_name(1, 1, 1, 7)
    u = "550e8400-e29b-41d4-a716-446655440000"
    assert layout.transaction_file_name(5, u) == f"5-{u}.txn"
    assert layout.parse_transaction_file_name(f"5-{u}.txn") == (5, u)
    assert layout.parse_transaction_file_name("x-abc.txn") is None
    assert layout.parse_transaction_file_name("5-abc.manifest") is None


def test_subdirectory_constants():
    assert (layout.DATA_DIR, layout.VERSIONS_DIR, layout.TRANSACTIONS_DIR, layout.DELETIONS_DIR,
            layout.INDICES_DIR, layout.TAGS_DIR, layout.BRANCHES_DIR, layout.TREE_DIR) == (
        "data", "_versions", "_transactions", "_deletions", "_indices", "_refs/tags",
        "_refs/branches", "tree")
    assert layout.branch_prefix(None) == "" and layout.branch_prefix("main") == ""
    assert layout.branch_prefix("a/b") == "tree/a/b"


@pytest.mark.parametrize("name,encoded", [
    ("t1", "t1"), ("feature/x/y", "feature%2Fx%2Fy"), ("ü", "%C3%BC"),
    ("日本", "%E6%97%A5%E6%9C%AC"), ("v1.2.3", "v1.2.3"), ("-a_b", "-a_b"),
])
def test_ref_name_encoding(name, encoded):
    assert layout.encode_ref_name(name) == encoded
    assert layout.decode_ref_name(encoded) == name


def test_ref_name_decoding_rejects_bad_utf8():
    with pytest.raises(InvalidInput):
        layout.decode_ref_name("%FF%FE")


@pytest.mark.parametrize("name", ["main", "-a", "_a", "1", "v1.2.3", "ünï", "日本", "a.b"])
def test_valid_tag_names(name):
    assert layout.validate_tag_name(name) == name


@pytest.mark.parametrize("name", ["", "a/b", "a b", "a@b", "a:b", "a+b", ".a", "a.", "a..b",
                                  "x.lock"])
def test_invalid_tag_names(name):
    with pytest.raises(InvalidInput):
        layout.validate_tag_name(name)


@pytest.mark.parametrize("name", ["dev", "feature/x/y", ".a", "a.", "a/.b", "ünï/日本"])
def test_valid_branch_names(name):
    assert layout.validate_branch_name(name) == name


@pytest.mark.parametrize("name", ["", "/a", "a/", "a//b", "a/../b", "a..b", "a\\b", "a.lock",
                                  "a/b.lock", "main", "a b", "a/b@c"])
def test_invalid_branch_names(name):
    with pytest.raises(InvalidInput):
        layout.validate_branch_name(name)


def test_names_agree_with_pylance(pylance, tmp_path):
    """Tag and branch name validity and ref file names match what pylance 14 does."""
    import pyarrow as pa

    uri = str(tmp_path / "ds")
    ds = pylance.write_dataset(pa.table({"a": [1, 2]}), uri)
    for name in ["ok", "ünï", "v1.2.3", ".bad", "bad.", "a..b", "x.lock", "a/b", ""]:
        ours = True
        try:
            layout.validate_tag_name(name)
        except InvalidInput:
            ours = False
        try:
            ds.tags.create(name, 1)
            theirs = True
        except Exception:  # noqa: BLE001 - pylance raises OSError/ValueError
            theirs = False
        assert ours == theirs, name
        if theirs:
            assert os.path.exists(os.path.join(uri, layout.tag_key(name)))
    for name in ["feature/x/y", ".a", "a/", "a//b", "main"]:
        ours = True
        try:
            layout.validate_branch_name(name)
        except InvalidInput:
            ours = False
        try:
            ds.create_branch(name, 1)
            theirs = True
        except Exception:  # noqa: BLE001
            theirs = False
        assert ours == theirs, name
        if theirs:
            assert os.path.exists(os.path.join(uri, layout.branch_key(name)))


def test_pylance_data_file_names_follow_the_convention(pylance, tmp_path):
    import pyarrow as pa

    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1, 2]}), uri)
    names = os.listdir(os.path.join(uri, "data"))
    assert names and all(layout.is_data_file_name(n) for n in names)
    assert all(uuid.UUID(bytes=layout.data_file_uuid(n)) for n in names)
