"""The census of operations: every public operation of pylance (and lancedb) that commits, as
scenarios of the cross-release corpus.

Like :mod:`release_program` (which imports this module), this runs inside a release's own
virtualenv and imports only that release and pyarrow. Each ``census-<group>-<storage>``
scenario is one table on which one group of operations runs, one step each, at every storage
version the release writes. Every step records, besides its outcome (``done``, ``missing``:
this release has no such API, ``failed``: it has one and refused or crashed), the table
version before and after it (``version_before``/``version_after``), so that the kit's verdict
on that version is the verdict on that operation. The operation ids are the rows of the
``lance-conformance census operations`` table (``conformance/census/operations.py`` lists
them with what each one calls).

Tables a step leaves outside ``table/`` are read back too: the versions of each branch
(``expected/branch-<name>/v{N}.arrows``, listed in ``scenario.json`` ``branches``), and a
shallow or deep clone is the ``table/`` of a scenario of its own (its source beside it).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import sys

import pyarrow as pa

rp = sys.modules.get("release_program")
if rp is None:  # imported on its own (a test): the program is the sibling module
    import release_program as rp  # noqa: E402

lance = rp.lance

#: The operations of the census, in the order the scenarios run them:
#: ``(operation id, scenario group)``. Kept in step with conformance/census/operations.py.
OPERATIONS = (
    ("create", "rows"), ("append", "rows"), ("append_with_properties", "rows"),
    ("insert", "rows"), ("delete", "rows"),
    ("delete_fragment", "rows"), ("update", "rows"), ("update_all", "rows"),
    ("merge_insert_upsert", "rows"), ("merge_insert_update_if", "rows"),
    ("merge_insert_insert_only", "rows"), ("merge_insert_delete_matched", "rows"),
    ("merge_insert_delete_by_source", "rows"), ("merge_insert_fail", "rows"),
    ("merge_insert_partial", "rows"), ("commit_delete", "rows"), ("commit_append", "rows"),
    ("truncate", "rows"), ("overwrite", "rows"), ("commit_overwrite", "rows"),
    ("data_replacement_fragment", "schema"), ("project", "schema"),
    ("add_columns_sql", "schema"), ("add_columns_udf", "schema"),
    ("add_columns_null", "schema"), ("data_replacement", "schema"), ("alter_rename", "schema"),
    ("alter_cast", "schema"), ("alter_nullable", "schema"), ("alter_nested_rename", "schema"),
    ("merge", "schema"), ("commit_merge", "schema"), ("commit_update_columns", "schema"),
    ("drop_columns", "schema"), ("schema_metadata", "schema"),
    ("field_metadata", "schema"), ("table_metadata", "schema"), ("config", "schema"),
    ("delete_config_keys", "schema"), ("commit_update_config", "schema"),
    ("data_overlay", "schema"),
    ("scalar_index", "maintenance"), ("vector_index", "maintenance"),
    ("compact", "maintenance"), ("optimize_indices", "maintenance"),
    ("drop_index", "maintenance"), ("tag_create", "maintenance"),
    ("tag_update", "maintenance"), ("tag_delete", "maintenance"), ("restore", "maintenance"),
    ("commit_restore", "maintenance"), ("reserve_fragments", "maintenance"),
    ("migrate_manifest_paths_v2", "maintenance"), ("cleanup_old_versions", "cleanup"),
    ("index_btree", "indices"), ("index_bitmap", "indices"), ("index_label_list", "indices"),
    ("index_ngram", "indices"), ("index_zonemap", "indices"), ("index_bloomfilter", "indices"),
    ("index_inverted", "indices"), ("index_ivf_flat", "indices"), ("index_ivf_pq", "indices"),
    ("index_ivf_sq", "indices"), ("index_ivf_hnsw_pq", "indices"),
    ("index_ivf_hnsw_sq", "indices"), ("index_ivf_rq", "indices"),
    ("index_insert", "indices"), ("index_optimize", "indices"), ("index_compact", "indices"),
    ("create_branch", "refs"), ("branch_append", "refs"), ("branch_delete", "refs"),
    ("branch_tag", "refs"), ("main_after_branch", "refs"),
    ("shallow_clone", "clone"), ("clone_append", "clone"), ("clone_delete", "clone"),
    ("deep_clone", "deep-clone"),
    ("initial_bases", "bases"), ("add_bases", "bases"), ("append_to_base", "bases"),
    ("stable_row_ids", "rowids"), ("rowids_update", "rowids"),
    ("rowids_merge_insert", "rowids"), ("rowids_delete", "rowids"),
    ("rowids_compact", "rowids"), ("rowids_index_remap", "rowids"),
    ("blob_write", "blob"), ("blob_append", "blob"), ("blob_delete", "blob"),
    ("blob_update", "blob"), ("blob_compact", "blob"), ("blob_external", "blob"),
    ("json_write", "json"), ("json_index", "json"), ("json_append", "json"),
    ("json_update", "json"), ("json_delete", "json"),
    # lancedb's own (its other operations share the ids above)
    ("fts_index", "lancedb"), ("optimize", "lancedb"),
)

COLUMNS = ["i32", "f32", "s", "st", "li", "vec"]


def _label(storage):
    return storage or "default"


def table(cols, start, n):
    """The census table: ``id`` (int64, not null) and the columns of ``release_program``."""
    t = rp.make_table(cols, start, n)
    return t.cast(t.schema.set(0, pa.field("id", pa.int64(), nullable=False)))


def changed(t):
    """``t`` with other values in ``s`` (so that an update by merge_insert shows)."""
    if "s" not in t.column_names:
        return t
    i = t.column_names.index("s")
    ids = t.column("id").to_pylist()
    return t.set_column(i, t.schema.field(i), pa.array([f"changed-{x}" for x in ids],
                                                        t.schema.field(i).type))


def _version(uri, branch=None):
    """The latest version of the table (of ``branch``), or None where there is no table. A
    latest version the release cannot open itself (pylance 14.0.2's data overlays) is found
    through the version list of its first version."""
    try:
        return _branch(uri, branch).version if branch else lance.dataset(uri).version
    except BaseException as e:  # noqa: BLE001 - no table yet, or one the release cannot open
        if isinstance(e, KeyboardInterrupt):
            raise
    if branch is None:
        try:
            return max(v["version"] for v in lance.dataset(uri, version=1).versions())
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
    return None


class Census:
    """Steps of one census scenario, each recorded with the versions around it."""

    def __init__(self, rec, uri=None, branch=None, version=None):
        self.rec = rec
        self.uri = uri or rec.uri
        self.branch = branch
        self.version = version or (lambda: _version(self.uri, self.branch))

    def op(self, name, fn, *args, **kwargs):
        before = self.version()
        ok = self.rec.step(name, fn, *args, **kwargs)
        entry = self.rec.info["steps"][-1]
        entry.update(op=name, version_before=before, version_after=self.version())
        if self.branch:
            entry["branch"] = self.branch
        return ok

    def lacks(self, name, why):
        self.rec.info["steps"].append({"step": name, "op": name, "outcome": "missing",
                                       "error": why})

    def not_applicable(self, name, why):
        """The operation exists but has nothing to act on at this storage version."""
        self.rec.info["steps"].append({"step": name, "op": name,
                                       "outcome": "not-applicable", "error": why})

    def needs(self, name, *attrs):
        """True when the release has every ``module.attr`` path in ``attrs``; else the
        operation is recorded as missing."""
        for path in attrs:
            obj = lance
            for part in path.split("."):
                obj = getattr(obj, part, None)
                if obj is None:
                    self.lacks(name, f"this release has no lance.{path}")
                    return False
        return True

    def ds(self):
        return lance.dataset(self.uri)


def _storage_kwargs(fn, storage):
    try:
        return rp._kwargs_for(fn, **rp.write_kwargs(storage))
    except TypeError:
        return {}


def _commit(uri, operation, read_version):
    return lance.LanceDataset.commit(uri, operation, read_version=read_version)


def _field_id(ds, name):
    return ds.lance_schema.field(name).id()


def _file_version(storage):
    if storage in (None, "legacy", "0.1"):
        return None
    major, minor = storage.split(".")
    return int(major), int(minor)


# -- rows ---------------------------------------------------------------------------------


def census_rows(out, release, storage):
    rec = rp.Recorder(out, f"census-rows-{_label(storage)}", release)
    c = Census(rec)
    cols = rp.accepted_columns(rec, storage, COLUMNS)
    rec.info.update(census=True, storage=storage, columns=cols)

    def data(start, n):
        return table(cols, start, n)

    if not c.op("create", rp.write, data(0, 600), rec.uri, storage, max_rows_per_file=200):
        rec.save()
        return
    c.op("append", rp.write, data(600, 100), rec.uri, storage, mode="append")
    if rp._accepts(lance.write_dataset, "transaction_properties"):
        c.op("append_with_properties", rp.write, data(750, 10), rec.uri, storage,
             mode="append", commit_message="census append",
             transaction_properties={"census": "yes"})
    else:
        c.lacks("append_with_properties", "write_dataset has no transaction_properties")
    if c.needs("insert", "LanceDataset.insert"):
        c.op("insert", lambda: c.ds().insert(data(700, 50)))
    c.op("delete", lambda: c.ds().delete("id % 11 = 3"))
    c.op("delete_fragment", lambda: c.ds().delete("id >= 200 AND id < 400"))
    upd = {"i32": "i32 + 1"} if "i32" in cols else {"id": "id"}
    if "s" in cols:
        upd["s"] = "'updated'"
    c.op("update", lambda: c.ds().update(upd, where="id < 60"))
    c.op("update_all", lambda: c.ds().update({"f32": "f32 * 2"} if "f32" in cols
                                             else {"id": "id"}))

    def mi():
        return c.ds().merge_insert("id")

    c.op("merge_insert_upsert", lambda: mi().when_matched_update_all()
         .when_not_matched_insert_all().execute(changed(data(720, 60))))
    c.op("merge_insert_update_if", lambda: mi().when_matched_update_all(
        condition="target.id % 2 = 0").execute(changed(data(40, 30))))
    c.op("merge_insert_insert_only", lambda: mi().when_not_matched_insert_all()
         .execute(changed(data(770, 40))))
    c.op("merge_insert_delete_matched", lambda: mi().when_matched_delete()
         .execute(data(0, 20)))
    c.op("merge_insert_delete_by_source", lambda: mi().when_matched_update_all()
         .when_not_matched_by_source_delete("id >= 500 AND id < 520")
         .execute(changed(data(450, 40))))
    c.op("merge_insert_fail", lambda: mi().when_matched_fail().when_not_matched_insert_all()
         .execute(data(900, 10)))
    if "i32" in cols:
        part = data(600, 50).select(["id", "i32"])
        part = part.set_column(1, part.schema.field(1),
                               pa.array(range(-600, -550), pa.int32()))
        c.op("merge_insert_partial", lambda: mi().when_matched_update_all().execute(part))
    else:
        c.not_applicable("merge_insert_partial", "no i32 column at this storage version")

    def commit_delete():
        ds = c.ds()
        frag = ds.get_fragments()[0]
        new = frag.delete("id % 5 = 1")
        op = lance.LanceOperation.Delete([new] if new is not None else [],
                                         [] if new is not None else [frag.fragment_id],
                                         "id % 5 = 1")
        _commit(rec.uri, op, ds.version)

    if c.needs("commit_delete", "LanceOperation.Delete", "LanceDataset.commit"):
        c.op("commit_delete", commit_delete)

    def commit_append():
        ds = c.ds()
        from lance.fragment import write_fragments

        frags = write_fragments(data(1000, 30), rec.uri,
                                **_storage_kwargs(write_fragments, storage))
        _commit(rec.uri, lance.LanceOperation.Append(frags), ds.version)

    if c.needs("commit_append", "LanceOperation.Append", "fragment.write_fragments"):
        c.op("commit_append", commit_append)
    if c.needs("truncate", "LanceDataset.truncate_table"):
        c.op("truncate", lambda: c.ds().truncate_table())
    c.op("overwrite", rp.write, data(2000, 100), rec.uri, storage, mode="overwrite")

    def commit_overwrite():
        ds = c.ds()
        from lance.fragment import write_fragments

        t = data(3000, 50)
        frags = write_fragments(t, rec.uri, **_storage_kwargs(write_fragments, storage))
        _commit(rec.uri, lance.LanceOperation.Overwrite(t.schema, frags), ds.version)

    if c.needs("commit_overwrite", "LanceOperation.Overwrite", "fragment.write_fragments"):
        c.op("commit_overwrite", commit_overwrite)
    rp.read_back(rec)
    rec.save()


# -- schema -------------------------------------------------------------------------------


def census_schema(out, release, storage):
    rec = rp.Recorder(out, f"census-schema-{_label(storage)}", release)
    c = Census(rec)
    cols = rp.accepted_columns(rec, storage, ["i32", "f32", "s", "st", "li"])
    rec.info.update(census=True, storage=storage, columns=cols)
    if not c.op("create", rp.write, table(cols, 0, 450), rec.uri, storage,
                max_rows_per_file=150):
        rec.save()
        return

    def data_replacement_fragment():
        # upstream's own test: a whole fragment written anew (LanceFragment.create) replaces
        # the fragment's one data file, field for field
        ds = c.ds()
        from lance.fragment import LanceFragment

        frag = ds.get_fragments()[0]
        n = frag.metadata.physical_rows
        new = LanceFragment.create(rec.uri, changed(table(cols, 0, n)),
                                   **_storage_kwargs(LanceFragment.create, storage))
        _commit(rec.uri, lance.LanceOperation.DataReplacement(
            [lance.LanceOperation.DataReplacementGroup(frag.fragment_id, new.files[0])]),
            ds.version)

    if c.needs("data_replacement_fragment", "LanceOperation.DataReplacement",
               "LanceOperation.DataReplacementGroup"):
        c.op("data_replacement_fragment", data_replacement_fragment)

    def project():
        ds = c.ds()
        from lance.schema import LanceSchema

        # the last column dropped: the others keep their ids (0..n in order on creation)
        keep = ds.schema.remove(len(ds.schema) - 1)
        _commit(rec.uri, lance.LanceOperation.Project(LanceSchema.from_pyarrow(keep)),
                ds.version)

    if c.needs("project", "LanceOperation.Project", "schema.LanceSchema"):
        c.op("project", project)
    c.op("add_columns_sql", lambda: c.ds().add_columns({"x_sql": "id * 2"}))

    def udf():
        def double(batch):
            return pa.record_batch([pa.array([v * 3 for v in batch.column(0).to_pylist()],
                                             pa.int64())], names=["x_udf"])

        fn = lance.batch_udf(output_schema=pa.schema([pa.field("x_udf", pa.int64())]))(double)
        c.ds().add_columns(fn, read_columns=["id"])

    if c.needs("add_columns_udf", "batch_udf"):
        c.op("add_columns_udf", udf)
    c.op("add_columns_null", lambda: c.ds().add_columns(pa.field("x_null", pa.string())))

    def data_replacement():
        # a column's data file replaced by a file written on its own (LanceFileWriter), as
        # upstream's tests do: the file numbers its one field 0; the manifest maps it with
        # DataFile(fields=[id of x_sql], column_indices=[0])
        ds = c.ds()
        from lance.file import LanceFileWriter
        from lance.fragment import DataFile

        fid = _field_id(ds, "x_sql")
        version = _file_version(storage)
        groups = []
        for frag in ds.get_fragments():
            n = frag.metadata.physical_rows
            name = f"census-replacement-{frag.fragment_id}.lance"
            kw = rp._kwargs_for(LanceFileWriter.__init__, version=storage) if version else {}
            with LanceFileWriter(os.path.join(rec.uri, "data", name), **kw) as w:
                w.write_batch(pa.table({"x_sql": pa.array(range(10_000, 10_000 + n),
                                                          pa.int64())}))
            kw = {"file_major_version": version[0], "file_minor_version": version[1]}
            groups.append(lance.LanceOperation.DataReplacementGroup(
                frag.fragment_id, DataFile(path=name, fields=[fid], column_indices=[0], **kw)))
        _commit(rec.uri, lance.LanceOperation.DataReplacement(groups), ds.version)

    if _file_version(storage) is None:
        c.not_applicable("data_replacement", "a legacy (0.1) file keeps no column indices")
    elif c.needs("data_replacement", "LanceOperation.DataReplacement", "file.LanceFileWriter"):
        c.op("data_replacement", data_replacement)

    c.op("alter_rename", lambda: c.ds().alter_columns({"path": "x_sql", "name": "x_renamed"}))
    if "i32" in cols:
        c.op("alter_cast", lambda: c.ds().alter_columns({"path": "i32",
                                                          "data_type": pa.int64()}))
    else:
        c.not_applicable("alter_cast", "no i32 column at this storage version")
    c.op("alter_nullable", lambda: c.ds().alter_columns({"path": "id", "nullable": True}))
    if "st" in cols:
        c.op("alter_nested_rename", lambda: c.ds().alter_columns({"path": "st.y",
                                                                   "name": "y2"}))
    else:
        c.not_applicable("alter_nested_rename", "no struct column at this storage version "
                                                "(2.0 stores no struct validity)")
    c.op("merge", lambda: c.ds().merge(
        pa.table({"id": pa.array(range(0, 450, 3), pa.int64()),
                  "m": pa.array([f"m{i}" for i in range(0, 450, 3)])}), "id"))

    def commit_merge():
        ds = c.ds()
        frags, schema = [], None
        for frag in ds.get_fragments():
            md, schema = frag.merge_columns({"x_frag": "id + 1"}, columns=["id"])
            frags.append(md)
        _commit(rec.uri, lance.LanceOperation.Merge(frags, schema), ds.version)

    if c.needs("commit_merge", "LanceOperation.Merge", "LanceFragment.merge_columns"):
        c.op("commit_merge", commit_merge)

    def commit_update_columns():
        ds = c.ds()
        frag = ds.get_fragments()[0]
        rows = frag.to_table(columns=["id"], with_row_id=True)
        src = pa.table({"_rowid": rows.column("_rowid"),
                        "x_frag": pa.array([-v for v in rows.column("id").to_pylist()],
                                           pa.int64())})
        got = frag.update_columns(src)
        md, modified = got[0], got[1]
        _commit(rec.uri, lance.LanceOperation.Update(updated_fragments=[md],
                                                     fields_modified=modified), ds.version)

    if c.needs("commit_update_columns", "LanceFragment.update_columns",
               "LanceOperation.Update"):
        c.op("commit_update_columns", commit_update_columns)
    c.op("drop_columns", lambda: c.ds().drop_columns(["f32"] if "f32" in cols else ["m"]))

    c.op("schema_metadata", lambda: c.ds().replace_schema_metadata({"owner": "census"}))
    c.op("field_metadata", lambda: c.ds().replace_field_metadata("id", {"unit": "rows"}))
    c.op("table_metadata", lambda: c.ds().update_metadata({"census": "yes"}))
    c.op("config", lambda: c.ds().update_config({"census.key": "v", "census.other": "w"}))
    c.op("delete_config_keys", lambda: c.ds().delete_config_keys(["census.other"]))

    def commit_update_config():
        ds = c.ds()
        op = lance.LanceOperation.UpdateConfig(
            config_updates=lance.LanceOperation.UpdateMap({"census.raw": "1"}))
        _commit(rec.uri, op, ds.version)

    if c.needs("commit_update_config", "LanceOperation.UpdateConfig",
               "LanceOperation.UpdateMap"):
        c.op("commit_update_config", commit_update_config)

    def data_overlay():
        # new values for rows 1 and 4 of fragment 0's ``s``, in a file of their own
        ds = c.ds()
        from lance.file import LanceFileWriter
        from lance.fragment import DataFile

        frag = ds.get_fragments()[0]
        name = "census-overlay-0.lance"
        kw = rp._kwargs_for(LanceFileWriter.__init__, version=storage)
        with LanceFileWriter(os.path.join(rec.uri, "data", name), **kw) as w:
            w.write_batch(pa.table({"s": pa.array(["overlay-1", "overlay-4"])}))
        major, minor = _file_version(storage)
        f = DataFile(path=name, fields=[_field_id(ds, "s")], column_indices=[0],
                     file_major_version=major, file_minor_version=minor)
        op = lance.LanceOperation.DataOverlay([lance.LanceOperation.DataOverlayGroup(
            frag.fragment_id, [lance.LanceOperation.DataOverlayFile(f, [1, 4])])])
        _commit(rec.uri, op, ds.version)

    if "s" not in cols or _file_version(storage) is None:
        c.not_applicable("data_overlay", "a legacy (0.1) file keeps no column indices")
    elif c.needs("data_overlay", "LanceOperation.DataOverlay"):
        c.op("data_overlay", data_overlay)
    rp.read_back(rec)
    rec.save()


# -- maintenance --------------------------------------------------------------------------


def census_maintenance(out, release, storage):
    rec = rp.Recorder(out, f"census-maintenance-{_label(storage)}", release)
    c = Census(rec)
    cols = rp.accepted_columns(rec, storage, ["i32", "s", "vec"])
    rec.info.update(census=True, storage=storage, columns=cols)
    extra = {}
    if rp._accepts(lance.write_dataset, "enable_v2_manifest_paths"):
        extra["enable_v2_manifest_paths"] = False  # so that the migration has work to do
    if not c.op("create", rp.write, table(cols, 0, 600), rec.uri, storage,
                max_rows_per_file=150, **extra):
        rec.save()
        return
    c.op("append", rp.write, table(cols, 600, 150), rec.uri, storage, mode="append")
    c.op("scalar_index", lambda: c.ds().create_scalar_index("id", "BTREE"))
    if "vec" in cols:
        c.op("vector_index", lambda: c.ds().create_index("vec", "IVF_PQ", num_partitions=2,
                                                          num_sub_vectors=2))
    else:
        c.not_applicable("vector_index", "no vector column at this storage version")
    c.op("delete", lambda: c.ds().delete("id % 6 = 1"))
    c.op("compact", lambda: c.ds().optimize.compact_files(target_rows_per_fragment=400))
    c.op("append", rp.write, table(cols, 750, 40), rec.uri, storage, mode="append")
    c.op("optimize_indices", lambda: c.ds().optimize.optimize_indices())

    def drop_index():
        ds = c.ds()
        names = [i["name"] for i in ds.list_indices() if i.get("fields") == ["id"]
                 or "id" in str(i.get("fields"))]
        ds.drop_index(names[0] if names else "id_idx")

    if c.needs("drop_index", "LanceDataset.drop_index"):
        c.op("drop_index", drop_index)
    c.op("tag_create", lambda: c.ds().tags.create("first", 1))
    c.op("tag_update", lambda: c.ds().tags.update("first", 2))
    c.op("restore", lambda: lance.dataset(rec.uri, version=3).restore())

    def commit_restore():
        ds = c.ds()
        _commit(rec.uri, lance.LanceOperation.Restore(2), ds.version)

    if c.needs("commit_restore", "LanceOperation.Restore"):
        c.op("commit_restore", commit_restore)
    if hasattr(lance.LanceOperation, "ReserveFragments"):
        c.op("reserve_fragments", lambda: _commit(
            rec.uri, lance.LanceOperation.ReserveFragments(3), c.ds().version))
    else:
        c.lacks("reserve_fragments", "no public ReserveFragments (LanceOperation has none)")
    c.op("append", rp.write, table(cols, 800, 40), rec.uri, storage, mode="append")
    c.op("tag_delete", lambda: c.ds().tags.delete("first"))
    if c.needs("migrate_manifest_paths_v2", "LanceDataset.migrate_manifest_paths_v2"):
        c.op("migrate_manifest_paths_v2", lambda: c.ds().migrate_manifest_paths_v2())
    c.op("append", rp.write, table(cols, 850, 20), rec.uri, storage, mode="append")
    rp.read_back(rec)
    rec.save()


def census_cleanup(out, release, storage):
    """``cleanup_old_versions`` (its own table: it removes the versions other steps made)."""
    rec = rp.Recorder(out, f"census-cleanup-{_label(storage)}", release)
    c = Census(rec)
    rec.info.update(census=True, storage=storage)
    if not c.op("create", rp.write, table([], 0, 200), rec.uri, storage,
                max_rows_per_file=100):
        rec.save()
        return
    c.op("append", rp.write, table([], 200, 100), rec.uri, storage, mode="append")
    c.op("delete", lambda: c.ds().delete("id % 4 = 1"))
    c.op("tag_create", lambda: c.ds().tags.create("kept", 2))
    c.op("compact", lambda: c.ds().optimize.compact_files())
    c.op("overwrite", rp.write, table([], 1000, 50), rec.uri, storage, mode="overwrite")
    c.op("cleanup_old_versions", lambda: c.ds().cleanup_old_versions(**rp._kwargs_for(
        c.ds().cleanup_old_versions, older_than=datetime.timedelta(0),
        delete_unverified=True, error_if_tagged_old_versions=False)))
    c.op("append", rp.write, table([], 2000, 10), rec.uri, storage, mode="append")
    rp.read_back(rec)
    rec.save()


# -- every index kind on one table --------------------------------------------------------

#: (operation id, column, kind, how to create it)
_INDICES = (
    ("index_btree", "i_btree", "int", lambda ds, col: ds.create_scalar_index(col, "BTREE")),
    ("index_bitmap", "i_bitmap", "int", lambda ds, col: ds.create_scalar_index(col, "BITMAP")),
    ("index_label_list", "labels", "labels",
     lambda ds, col: ds.create_scalar_index(col, "LABEL_LIST")),
    ("index_ngram", "t_ngram", "text", lambda ds, col: ds.create_scalar_index(col, "NGRAM")),
    ("index_zonemap", "i_zonemap", "int",
     lambda ds, col: ds.create_scalar_index(col, "ZONEMAP")),
    ("index_bloomfilter", "i_bloom", "int",
     lambda ds, col: ds.create_scalar_index(col, "BLOOMFILTER")),
    ("index_inverted", "t_inverted", "text", lambda ds, col: ds.create_scalar_index(
        col, "INVERTED", **rp._kwargs_for(ds.create_scalar_index, with_position=True))),
    ("index_ivf_flat", "v_flat", "vec",
     lambda ds, col: ds.create_index(col, "IVF_FLAT", num_partitions=2)),
    ("index_ivf_pq", "v_pq", "vec", lambda ds, col: ds.create_index(
        col, "IVF_PQ", num_partitions=2, num_sub_vectors=4)),
    ("index_ivf_sq", "v_sq", "vec",
     lambda ds, col: ds.create_index(col, "IVF_SQ", num_partitions=2)),
    ("index_ivf_hnsw_pq", "v_hnsw_pq", "vec", lambda ds, col: ds.create_index(
        col, "IVF_HNSW_PQ", num_partitions=2, num_sub_vectors=4)),
    ("index_ivf_hnsw_sq", "v_hnsw_sq", "vec",
     lambda ds, col: ds.create_index(col, "IVF_HNSW_SQ", num_partitions=2)),
    ("index_ivf_rq", "v_rq", "vec", lambda ds, col: ds.create_index(
        col, "IVF_RQ", num_partitions=2, num_bits=1)),
)


def _indices_table(start, n):
    cols = {"idx": pa.array(range(start, start + n), pa.int64())}
    for _op, col, kind, _fn in _INDICES:
        arr = rp._index_column(kind, start, n)
        if kind == "int" and col == "i_bitmap":
            arr = pa.array([i % 13 for i in range(start, start + n)], pa.int64())
        cols[col] = arr
    return pa.table(cols)


def census_indices(out, release, storage):
    rec = rp.Recorder(out, f"census-indices-{_label(storage)}", release)
    c = Census(rec)
    rec.info.update(census=True, storage=storage)
    if not c.op("create", rp.write, _indices_table(0, 600), rec.uri, storage,
                max_rows_per_file=200):
        rec.save()
        return
    for op, col, _kind, create in _INDICES:
        c.op(op, lambda create=create, col=col: create(c.ds(), col))
    c.op("index_insert", rp.write, _indices_table(600, 30), rec.uri, storage, mode="append")
    c.op("delete", lambda: c.ds().delete("idx % 50 = 7"))
    c.op("index_optimize", lambda: c.ds().optimize.optimize_indices())
    c.op("index_compact", lambda: c.ds().optimize.compact_files())
    rp.read_back(rec)
    rec.save()


# -- branches, clones, base paths ---------------------------------------------------------


def _branch(uri, name, version=None):
    """Branch ``name`` of the table at ``uri`` (at ``version``, else its latest): through
    ``checkout_version((name, version))``, or (releases whose checkout takes no
    ``(branch, None)``) by opening the branch's directory ``tree/<name>``."""
    try:
        return lance.dataset(uri).checkout_version((name, version))
    except TypeError:
        return lance.dataset(os.path.join(uri, "tree", name), version=version)


def _branch_versions(uri, name):
    return [v["version"] for v in _branch(uri, name).versions()]


def read_back_branches(rec):
    """Every version of every branch, as the release reads it, under
    ``expected/branch-<name>/``; ``scenario.json`` ``branches`` lists them."""
    try:
        names = sorted(lance.dataset(rec.uri).branches.list())
    except BaseException as e:  # noqa: BLE001 - a release without branches, or a table the
        if isinstance(e, KeyboardInterrupt):  # release does not open ("*": none read)
            raise
        rec.info.setdefault("unreadable_branch_versions", {})["*"] = rp._short(e)
        return
    rec.info["branches"] = {}
    for name in names:
        folder = os.path.join(rec.dir, "expected", f"branch-{name}")
        os.makedirs(folder, exist_ok=True)
        versions = []
        try:
            listed = _branch_versions(rec.uri, name)
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            rec.info.setdefault("unreadable_branch_versions", {})[name] = rp._short(e)
            continue
        for v in listed:
            try:
                got = _branch(rec.uri, name, v).scanner(with_row_id=True).to_table()
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, KeyboardInterrupt):
                    raise
                rec.info.setdefault("unreadable_branch_versions", {})[f"{name}:{v}"] = \
                    rp._short(e)
                continue
            rp.save_table(os.path.join(folder, f"v{v}.arrows"), got)
            versions.append(v)
        rec.info["branches"][name] = versions


def census_refs(out, release, storage):
    rec = rp.Recorder(out, f"census-refs-{_label(storage)}", release)
    c = Census(rec)
    cols = rp.accepted_columns(rec, storage, ["i32", "s"])
    rec.info.update(census=True, storage=storage, columns=cols)
    if not c.op("create", rp.write, table(cols, 0, 300), rec.uri, storage,
                max_rows_per_file=100):
        rec.save()
        return
    c.op("append", rp.write, table(cols, 300, 50), rec.uri, storage, mode="append")
    if not c.needs("create_branch", "LanceDataset.create_branch"):
        for op in ("branch_append", "branch_delete", "branch_tag", "main_after_branch"):
            c.lacks(op, "this release has no branches")
        rp.read_back(rec)
        rec.save()
        return
    c.op("tag_create", lambda: c.ds().tags.create("first", 1))
    c.op("create_branch", lambda: c.ds().create_branch("dev"))

    def branch():
        return _branch(rec.uri, "dev")

    dev = Census(rec, branch="dev")
    dev.op("branch_append", lambda: lance.write_dataset(table(cols, 1000, 40), branch(),
                                                        mode="append"))
    dev.op("branch_delete", lambda: branch().delete("id % 9 = 2"))
    dev.op("branch_tag", lambda: c.ds().tags.create("dev-tip", ("dev", branch().version)))
    c.op("main_after_branch", lambda: c.ds().delete("id < 25"))
    rp.read_back(rec)
    read_back_branches(rec)
    rec.save()


def census_clone(out, release, storage, deep=False):
    kind = "deep-clone" if deep else "clone"
    rec = rp.Recorder(out, f"census-{kind}-{_label(storage)}", release)
    rec.info.update(census=True, storage=storage)
    source = os.path.join(rec.dir, "source")
    c = Census(rec)
    src = Census(rec, source)
    cols = rp.accepted_columns(rec, storage, ["i32", "s"])
    rec.info["columns"] = cols
    if not src.op("source_create", rp.write, table(cols, 0, 300), source, storage,
                  max_rows_per_file=100):
        rec.save()
        return
    src.op("source_delete", lambda: lance.dataset(source).delete("id % 10 = 0"))
    op = "deep_clone" if deep else "shallow_clone"
    if not c.needs(op, f"LanceDataset.{op}"):
        rec.save()
        return
    if not c.op(op, lambda: getattr(lance.dataset(source), op)(rec.uri, 2)):
        rec.save()
        return
    if not deep:
        c.op("clone_append", rp.write, table(cols, 500, 30), rec.uri, storage, mode="append")
        c.op("clone_delete", lambda: c.ds().delete("id % 7 = 0"))
        src.op("source_after_clone", lambda: lance.dataset(source).delete("id < 50"))
    rp.read_back(rec)
    rec.save()


def census_bases(out, release, storage):
    rec = rp.Recorder(out, f"census-bases-{_label(storage)}", release)
    rec.info.update(census=True, storage=storage)
    c = Census(rec)
    cols = rp.accepted_columns(rec, storage, ["i32", "s"])
    rec.info["columns"] = cols
    DatasetBasePath = getattr(lance, "DatasetBasePath", None)
    if DatasetBasePath is None or not rp._accepts(lance.write_dataset, "initial_bases"):
        for op in ("initial_bases", "add_bases", "append_to_base"):
            c.lacks(op, "this release has no base paths (DatasetBasePath, initial_bases)")
        rec.save()
        return
    b1, b2 = (os.path.join(rec.dir, "bases", n) for n in ("b1", "b2"))
    os.makedirs(b1)
    os.makedirs(b2)
    if not c.op("initial_bases", rp.write, table(cols, 0, 200), rec.uri, storage,
                max_rows_per_file=100, initial_bases=[DatasetBasePath(b1, name="b1")],
                target_bases=["b1"]):
        rec.save()
        return
    c.op("append", rp.write, table(cols, 200, 50), rec.uri, storage, mode="append")
    c.op("add_bases", lambda: c.ds().add_bases([DatasetBasePath(b2, name="b2")]))
    c.op("append_to_base", rp.write, table(cols, 250, 60), rec.uri, storage, mode="append",
         target_bases=["b2"])
    c.op("delete", lambda: c.ds().delete("id % 8 = 5"))
    c.op("compact", lambda: c.ds().optimize.compact_files())
    rp.read_back(rec)
    rec.save()


# -- stable row ids -----------------------------------------------------------------------


def census_rowids(out, release, storage):
    rec = rp.Recorder(out, f"census-rowids-{_label(storage)}", release)
    rec.info.update(census=True, storage=storage)
    c = Census(rec)
    fn = lance.write_dataset
    flag = ("enable_stable_row_ids" if rp._accepts(fn, "enable_stable_row_ids") else
            "enable_move_stable_row_ids" if rp._accepts(fn, "enable_move_stable_row_ids")
            else None)
    if flag is None:
        c.lacks("stable_row_ids", "no stable row ids in this release")
        rec.save()
        return
    cols = rp.accepted_columns(rec, storage, ["i32", "s"])
    rec.info["columns"] = cols
    if not c.op("stable_row_ids", rp.write, table(cols, 0, 400), rec.uri, storage,
                max_rows_per_file=100, **{flag: True}):
        rec.save()
        return
    c.op("rowids_update", lambda: c.ds().update({"id": "id + 10000"}, where="id < 30"))
    c.op("rowids_merge_insert", lambda: c.ds().merge_insert("id").when_matched_update_all()
         .when_not_matched_insert_all().execute(changed(table(cols, 380, 40))))
    c.op("rowids_delete", lambda: c.ds().delete("id % 5 = 2"))
    c.op("scalar_index", lambda: c.ds().create_scalar_index("id", "BTREE"))
    c.op("rowids_compact", lambda: c.ds().optimize.compact_files(target_rows_per_fragment=300))
    c.op("rowids_index_remap", lambda: c.ds().optimize.optimize_indices())
    c.op("append", rp.write, table(cols, 500, 20), rec.uri, storage, mode="append")
    rp.read_back(rec)
    rec.save()


# -- blob and JSON columns ----------------------------------------------------------------


def _blob_table(start, n, v2=False):
    """Blobs of every size class: empty, small (inline), 80 KiB (a pack sidecar in blob v2)
    and one of 5 MiB (a dedicated sidecar); nulls."""
    vals = []
    for i in range(start, start + n):
        if i % 9 == 4:
            vals.append(None)
        elif i % 9 == 5:
            vals.append(b"")
        elif i % 40 == 17:
            vals.append(bytes([i % 251]) * (80 * 1024))
        elif i == 23:
            vals.append(bytes(range(256)) * (5 * 4096))
        else:
            vals.append(bytes([i % 256]) * (i % 300))
    field = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    return pa.Table.from_arrays(
        [pa.array(range(start, start + n), pa.int64()), pa.array(vals, pa.large_binary()),
         pa.array([rp._words(i) for i in range(start, start + n)])],
        schema=pa.schema([pa.field("id", pa.int64()), field, pa.field("s", pa.string())]))


def read_back_blobs(rec):
    """The blob bytes, as ``take_blobs`` returns them, of the latest version: stored as
    ``expected/blobs.arrows`` (``_rowid``, ``bytes``)."""
    try:
        ds = lance.dataset(rec.uri)
        ids = ds.scanner(columns=["id"], with_row_id=True).to_table().column("_rowid")
        ids = ids.to_pylist()
        files = ds.take_blobs("blob", ids=ids) if ids else []
        data = [f.read() if f is not None else None for f in files]
    except BaseException as e:  # noqa: BLE001 - a release without take_blobs
        if isinstance(e, KeyboardInterrupt):
            raise
        rec.info["take_blobs"] = rp._short(e)
        return
    if len(data) != len(ids):
        # pylance 9.0.1 returns fewer blobs than the row ids asked for (120 of 135): no
        # reading to hold the kit's against, and no reason to lose the rest of the census
        rec.info["take_blobs"] = f"take_blobs returned {len(data)} blobs for {len(ids)} row ids"
        return
    rp.save_table(os.path.join(rec.dir, "expected", "blobs.arrows"),
                  pa.table({"_rowid": pa.array(ids, pa.uint64()),
                            "bytes": pa.array(data, pa.large_binary())}))
    rec.info["take_blobs"] = "stored"


def census_blob(out, release, storage):
    rec = rp.Recorder(out, f"census-blob-{_label(storage)}", release)
    rec.info.update(census=True, storage=storage)
    c = Census(rec)
    if not c.op("blob_write", rp.write, _blob_table(0, 120), rec.uri, storage,
                max_rows_per_file=50):
        rec.save()
        return
    c.op("blob_append", rp.write, _blob_table(120, 30), rec.uri, storage, mode="append")
    c.op("blob_delete", lambda: c.ds().delete("id % 10 = 3"))
    c.op("blob_update", lambda: c.ds().update({"s": "'updated'"}, where="id < 40"))
    c.op("blob_compact", lambda: c.ds().optimize.compact_files())

    def external():
        path = os.path.join(rec.dir, "external.bin")
        with open(path, "wb") as f:
            f.write(bytes(range(256)) * 8)
        field = lance.blob_field("blob")
        t = pa.table({"id": pa.array([5000, 5001], pa.int64()),
                      "blob": lance.blob_array([lance.Blob(uri="file://" + path),
                                                lance.Blob(uri="file://" + path, position=16,
                                                           size=100)]),
                      "s": pa.array(["ext", "ext-range"])},
                     schema=pa.schema([pa.field("id", pa.int64()), field,
                                       pa.field("s", pa.string())]))
        rp.write(t, rec.uri, storage, mode="append", allow_external_blob_outside_bases=True)

    if storage not in ("2.2", "2.3"):
        c.not_applicable("blob_external", "external blobs are blob v2 (storage 2.2 and "
                                          "later)")
    elif c.needs("blob_external", "blob_field", "blob_array", "Blob"):
        c.op("blob_external", external)
    rp.read_back(rec)
    read_back_blobs(rec)
    rec.save()


def census_json(out, release, storage):
    rec = rp.Recorder(out, f"census-json-{_label(storage)}", release)
    rec.info.update(census=True, storage=storage)
    c = Census(rec)
    if not hasattr(pa, "json_"):
        c.lacks("json_write", "this pyarrow has no json_ type")
        rec.save()
        return

    def data(start, n):
        docs = []
        for i in range(start, start + n):
            doc = {"val": i, "name": rp._words(i), "tags": [i % 3, None, i * 0.5],
                   "nested": {"ok": i % 2 == 0, "none": None}}
            docs.append(None if i % 13 == 12 else json.dumps(doc, ensure_ascii=i % 2 == 0))
        return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                         "j": pa.array(docs, pa.json_())})

    if not c.op("json_write", rp.write, data(0, 300), rec.uri, storage, max_rows_per_file=100):
        rec.save()
        return

    def json_index():
        from lance.indices import IndexConfig

        c.ds().create_scalar_index("j", IndexConfig(
            index_type="json", parameters={"target_index_type": "btree", "path": "val"}))

    c.op("json_index", json_index)
    c.op("json_append", rp.write, data(300, 40), rec.uri, storage, mode="append")
    c.op("json_update", lambda: c.ds().update({"j": "'{\"val\": -1}'"}, where="id < 5"))
    c.op("json_delete", lambda: c.ds().delete("id % 7 = 3"))
    rp.read_back(rec)
    rec.save()


# -- the whole census ---------------------------------------------------------------------

GROUPS = (census_rows, census_schema, census_maintenance, census_cleanup, census_indices,
          census_refs,
          census_clone, census_bases, census_rowids, census_blob, census_json)


def run_census(out, release, storages):
    """Every census group at every storage version ``release`` writes (deep clones at the
    newest only: a copy has nothing the shallow clone lacks but its own files)."""
    for storage in storages:
        for group in GROUPS:
            group(out, release, storage)
    census_clone(out, release, storages[-1], deep=True)
    for folder in os.listdir(out):  # the probes of accepted_columns leave nothing behind
        shutil.rmtree(os.path.join(out, folder, "_probe"), ignore_errors=True)


# -- lancedb ------------------------------------------------------------------------------

lancedb = rp.lancedb


def _lancedb_blob(storage, start, n):
    """A blob column lancedb writes at ``storage``: blob v1 (``lance-encoding:blob``) at
    2.0/2.1, blob v2 (the ``lance.blob.v2`` struct) at 2.2 and later; None at legacy."""
    vals = [None if i % 9 == 4 else bytes([i % 256]) * (i % 200) for i in range(start, start + n)]
    if storage in ("2.0", "2.1"):
        return (pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
                pa.array(vals, pa.large_binary()))
    if storage in ("2.2", "2.3"):
        st = pa.struct([pa.field("data", pa.large_binary()), pa.field("uri", pa.string())])
        return (pa.field("blob", st, metadata={"ARROW:extension:name": "lance.blob.v2",
                                               "ARROW:extension:metadata": ""}),
                pa.array([None if v is None else {"data": v, "uri": None} for v in vals], st))
    return None


def _lancedb_table(storage, cols, start, n, with_blob):
    t = table(cols, start, n)
    blob = _lancedb_blob(storage, start, n) if with_blob else None
    if blob is not None:
        t = t.append_column(*blob)
    return t


def census_lancedb(out, release, storage):
    """The census operations lancedb has, on one table per storage version."""
    rec = rp.Recorder(out, f"census-lancedb-{_label(storage)}", release)
    rec.info.update(census=True, storage=storage)
    db_dir = os.path.join(rec.dir, "db")
    cols = ["i32", "s", "vec"]
    state = {}
    c = Census(rec, version=lambda: state["t"].version if "t" in state else None)

    def create():
        db = lancedb.connect(db_dir)
        kw = {}
        if storage is not None:
            kw["storage_options"] = {"new_table_data_storage_version": storage}
        try:
            state["t"] = db.create_table("t", _lancedb_table(storage, cols, 0, 600, True), **kw)
            state["blob"] = _lancedb_blob(storage, 0, 1) is not None
        except BaseException as e:  # noqa: BLE001 - a release without blob columns
            if isinstance(e, KeyboardInterrupt) or "blob" not in str(e).lower():
                raise
            shutil.rmtree(db_dir, ignore_errors=True)
            db = lancedb.connect(db_dir)
            state["t"] = db.create_table("t", _lancedb_table(storage, cols, 0, 600, False), **kw)
            state["blob"] = False

    if not c.op("create", create):
        rec.save()
        shutil.rmtree(rec.dir, ignore_errors=True)  # this lancedb cannot write this version
        return
    rec.info["blob"] = state["blob"]
    t = state["t"]

    def data(start, n, *, only=None):
        got = _lancedb_table(storage, cols, start, n, state["blob"])
        return got.select(only) if only else got

    c.op("append", lambda: t.add(data(600, 100)))
    c.op("delete", lambda: t.delete("id % 11 = 3"))
    c.op("update", lambda: t.update(where="id < 60", values={"i32": 7}))
    c.op("update_all", lambda: t.update(values_sql={"i32": "i32 + 1"}))
    c.op("merge_insert_upsert", lambda: t.merge_insert("id").when_matched_update_all()
         .when_not_matched_insert_all().execute(changed(data(680, 60))))
    c.op("merge_insert_update_if", lambda: t.merge_insert("id").when_matched_update_all(
        where="target.id % 2 = 0").execute(changed(data(40, 30))))
    c.op("merge_insert_insert_only", lambda: t.merge_insert("id").when_not_matched_insert_all()
         .execute(changed(data(740, 30))))
    c.op("merge_insert_delete_by_source", lambda: t.merge_insert("id")
         .when_matched_update_all().when_not_matched_by_source_delete("id >= 500 AND id < 520")
         .execute(changed(data(450, 40))))
    c.op("add_columns_sql", lambda: t.add_columns({"x_sql": "id * 2"}))
    c.op("add_columns_null", lambda: t.add_columns(pa.field("x_null", pa.string())))
    c.op("alter_rename", lambda: t.alter_columns({"path": "x_sql", "rename": "x_renamed"}))
    c.op("alter_cast", lambda: t.alter_columns({"path": "i32", "data_type": pa.int64()}))
    c.op("alter_nullable", lambda: t.alter_columns({"path": "id", "nullable": True}))
    c.op("drop_columns", lambda: t.drop_columns(["x_null"]))
    c.op("merge", lambda: t.merge(pa.table({"id": pa.array(range(0, 800, 3), pa.int64()),
                                            "m": pa.array([f"m{i}" for i in range(0, 800, 3)])}),
                                  left_on="id"))
    c.op("scalar_index", lambda: t.create_scalar_index("id"))
    c.op("index_bitmap", lambda: t.create_scalar_index("s", index_type="BITMAP"))
    c.op("fts_index", lambda: t.create_fts_index("s", **rp._kwargs_for(
        t.create_fts_index, use_tantivy=False)))
    c.op("vector_index", lambda: t.create_index(**rp._kwargs_for(
        t.create_index, metric="l2", vector_column_name="vec", num_partitions=2,
        num_sub_vectors=2)))
    c.op("field_metadata", lambda: t.replace_field_metadata("s", {"unit": "words"}))
    c.op("tag_create", lambda: t.tags.create("first", 1))
    c.op("tag_update", lambda: t.tags.update("first", 2))
    c.op("compact", lambda: t.compact_files())
    c.op("optimize", lambda: t.optimize())
    c.op("delete", lambda: t.delete("id % 13 = 5"))
    c.op("restore", lambda: (t.checkout(3), t.restore()))
    c.op("tag_delete", lambda: t.tags.delete("first"))
    c.op("migrate_manifest_paths_v2", lambda: t.migrate_v2_manifest_paths())
    rp._read_back_lancedb(rec, db_dir)
    _read_back_lancedb_plain(rec, db_dir)
    src = os.path.join(db_dir, "t.lance")
    if os.path.isdir(src):
        shutil.move(src, rec.uri)
    shutil.rmtree(db_dir, ignore_errors=True)
    rec.save()


def _read_back_lancedb_plain(rec, db_dir):
    """Every version as lancedb's ``to_arrow()`` returns it (no row ids asked for), under
    ``expected-plain/``: lancedb then gives a blob v2 column's descriptors one more child,
    ``_lance_row_id`` (seen on 0.38.0 and 0.40.0)."""
    if not os.path.isdir(os.path.join(db_dir, "t.lance")):
        return
    folder = os.path.join(rec.dir, "expected-plain")
    os.makedirs(folder, exist_ok=True)
    t = lancedb.connect(db_dir).open_table("t")
    for v in rec.info.get("versions", []):
        try:
            t.checkout(v)
            got = t.to_arrow()
            rows = t.count_rows()
            if got.num_rows != rows:
                # lancedb 0.20.0's to_arrow() is a query with its default limit of 10 rows:
                # the whole version is asked for with a limit of its row count
                rec.info.setdefault("plain_limited", {})[str(v)] = \
                    f"to_arrow() gave {got.num_rows} of {rows} rows"
                got = t.search().limit(rows).to_arrow()
            if got.num_rows != rows:
                raise RuntimeError(f"the plain reading gave {got.num_rows} of {rows} rows")
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            rec.info.setdefault("unreadable_plain", {})[str(v)] = rp._short(e)
            continue
        rp.save_table(os.path.join(folder, f"v{v}.arrows"), got)


def run_lancedb_census(out, release):
    for storage in (None, "legacy", "2.0", "2.1", "2.2"):
        census_lancedb(out, release, storage)
