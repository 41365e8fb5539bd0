"""Feature flags (spec 001 "Feature Flags"; FACTS §A "Feature flags observed")."""

from __future__ import annotations

import pytest

from reference_impl import open_dataset
from reference_impl.errors import UnsupportedFeature
from reference_impl.io.uri import open_store
from reference_impl.proto import table_pb2
from reference_impl.table import flags, versions
from reference_impl.table.manifest import encode_manifest_file, read_manifest_file


def test_flag_values_and_names():
    assert (flags.DELETION_FILES, flags.STABLE_ROW_IDS, flags.USE_V2_FORMAT_DEPRECATED,
            flags.TABLE_CONFIG, flags.BASE_PATHS, flags.TRANSACTION_FILES_DISABLED) == (
        1, 2, 4, 8, 16, 32)
    assert flags.flag_names(0) == []
    assert flags.flag_names(17) == ["DELETION_FILES", "BASE_PATHS"]
    assert flags.flag_names(128 | 1) == ["DELETION_FILES", "UNKNOWN(128)"]
    assert flags.flag_names(64) == [flags.FLAG_NAMES[64]] and "DATA_OVERLAYS" in \
        flags.FLAG_NAMES[64]


def test_reader_accepts_every_flag_below_64():
    m = table_pb2.Manifest(reader_feature_flags=63, writer_feature_flags=63)
    flags.check_reader_flags(m)
    flags.check_writer_flags(m)


@pytest.mark.parametrize("bit", [128, 1 << 40, 1 << 63])
def test_unknown_flags_refused_by_name(bit):
    m = table_pb2.Manifest(reader_feature_flags=bit | 1, writer_feature_flags=bit)
    with pytest.raises(UnsupportedFeature, match=f"UNKNOWN\\({bit}\\)"):
        flags.check_reader_flags(m, path="x")
    with pytest.raises(UnsupportedFeature, match=f"UNKNOWN\\({bit}\\)"):
        flags.check_writer_flags(m)


def test_data_overlays_are_refused_by_name(pylance, tmp_path):
    """pylance 14.0.2's DataOverlay commit sets flag 64 and 14.0.2 then refuses its own table;
    the reader refuses it naming the feature, and TXN-006 names the operation."""
    import pyarrow as pa
    from lance.fragment import write_fragments

    from conformance.engine import validate

    uri = str(tmp_path / "ds")
    ds = pylance.write_dataset(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}), uri,
                               data_storage_version="2.1")
    (frag,) = write_fragments(pa.table({"s": ["B"]}), uri, data_storage_version="2.1")
    op = pylance.LanceOperation.DataOverlay([pylance.LanceOperation.DataOverlayGroup(
        0, [pylance.LanceOperation.DataOverlayFile(frag.files[0], [1])])])
    pylance.LanceDataset.commit(uri, op, read_version=ds.version)
    with pytest.raises(Exception, match="Flags: 64"):
        pylance.dataset(uri)
    with pytest.raises(UnsupportedFeature, match="DATA_OVERLAYS") as err:
        open_dataset(uri)
    assert err.value.rule == "FLAGS-001"
    assert open_dataset(uri, version=1).count_rows() == 3
    report = validate(uri, versions="all")
    assert {"FLAGS-001", "TXN-006"} <= report.rules_violated(), report.render("text")
    assert any("DataOverlay" in v.message for v in report.violations if v.rule == "TXN-006")


def test_open_refuses_unknown_reader_flag(pylance, tmp_path):
    import pyarrow as pa

    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1]}), uri)
    store = open_store(uri)
    entry = versions.latest_entry(store)
    mf = read_manifest_file(store, entry.key)
    mf.manifest.reader_feature_flags = 128
    store.put(entry.key, encode_manifest_file(mf.manifest, transaction=mf.transaction_bytes))
    with pytest.raises(UnsupportedFeature, match="UNKNOWN\\(128\\)"):
        open_dataset(uri)
    # an unknown *writer* flag does not stop a reader
    mf.manifest.reader_feature_flags = 0
    mf.manifest.writer_feature_flags = 128
    store.put(entry.key, encode_manifest_file(mf.manifest, transaction=mf.transaction_bytes))
    assert open_dataset(uri).count_rows() == 1


EXPECTED_FLAG_SCENARIOS = ["append", "delete_few", "delete_many", "stable_row_ids",
                           "config_metadata", "shallow_clone", "branches", "scalar_index",
                           "update", "compaction", "merge"]


@pytest.mark.parametrize("scenario", EXPECTED_FLAG_SCENARIOS)
def test_expected_flags_match_pylance(pylance_scenarios, scenario):
    """The flags pylance wrote equal those computed from each manifest's contents."""
    path = pylance_scenarios[scenario]
    info = pylance_scenarios.info(scenario)
    roots = [path] + [t["path"] for t in info["branch_versions"].values()]
    if info.get("clone"):
        roots.append(info["clone"]["path"])
    for root in roots:
        store = open_store(root)
        for e in versions.list_versions(store):
            m = read_manifest_file(store, e.key).manifest
            assert flags.expected_flags(m) == (m.reader_feature_flags, m.writer_feature_flags), (
                root, e.version)


def test_expected_flags_from_contents():
    m = table_pb2.Manifest()
    assert flags.expected_flags(m) == (0, 0)
    frag = m.fragments.add(id=0, physical_rows=3)
    frag.deletion_file.num_deleted_rows = 1
    m.config["k"] = "v"
    m.base_paths.add(id=0, path="/x", is_dataset_root=True)
    assert flags.expected_flags(m) == (1 | 16, 1 | 8 | 16)
    m2 = table_pb2.Manifest(next_row_id=3)
    assert flags.expected_flags(m2) == (2, 2)


def test_a_moved_next_row_id_without_flag_2_reads_row_addresses(pylance, tmp_path):
    """pylance 1.0.4 drops flag 2 when a table with stable row ids is emptied by deletes and
    written again, and leaves ``next_row_id`` moved (flags 0, next_row_id 3360, fragments
    without row id sequences: long-history campaign). Spec 004 uses next_row_id "only if
    the stable_row_ids feature flag is set": the row ids are row addresses, as pylance
    reads them; the reader refused the version (ROWID-001)."""
    import pyarrow as pa

    from conformance.suite.scenarios import corrupt_manifest

    uri = str(tmp_path / "t")
    pylance.write_dataset(pa.table({"a": pa.array(range(5), pa.int64())}), uri,
                          enable_stable_row_ids=True)

    def like_1_0_4(m):
        m.reader_feature_flags &= ~flags.STABLE_ROW_IDS
        m.writer_feature_flags &= ~flags.STABLE_ROW_IDS
        for f in m.fragments:
            f.ClearField("row_id_sequence")
        assert m.next_row_id == 5

    corrupt_manifest(uri, like_1_0_4)
    m = read_manifest_file(open_store(uri), versions.list_versions(open_store(uri))[-1].key)
    assert not flags.reads_stable_row_ids(m.manifest) and flags.uses_stable_row_ids(m.manifest)
    want = pylance.dataset(uri).to_table(with_row_id=True)
    got = open_dataset(uri).to_table(with_row_id=True)
    assert got.column("_rowid").to_pylist() == want.column("_rowid").to_pylist() == list(range(5))
    assert got.column("a").equals(want.column("a"))
