"""Mutation campaigns over the cross-release corpus (``lance-conformance fixtures mutate``).

* The verdict of a mutation from what both sides made of it: a crash, untyped error or
  validator failure of the kit is a ``problem``; rows that differ with no new finding a
  ``misread``; a copy pylance refuses and the kit reads without a new finding ``lenient``;
  findings the undamaged root already draws say nothing about the damage, nor does pylance's
  refusal of a copy of a root it refuses undamaged.
* The damage is reproducible: the same seed gives the same bytes, and each kind changes the
  file as it says (tail flips in the last 4 KiB, a cut end, a run of zeros).
* A small campaign over a table pylance 14.0.2 wrote, judged against the same pylance: every
  mutation gets a verdict and none is a failing one; the command exits 0 and writes one JSON
  line per mutation, and exits 2 on a folder without a corpus or on an unknown target.
* ``--targets`` picks the files a mutation may damage (data, manifest, deletion, transaction,
  index files, or any file); a campaign over manifests and deletion files runs the same way.
* ``--kinds field`` edits one protobuf field of a manifest, transaction file or 2.x data
  file's column metadata in place (inside its page encodings too): the file still parses and
  says one thing differently.
"""

from __future__ import annotations

import json
import random
import sys

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.releases import mutations as mu
from conformance.releases.mutations import Baseline, Outcome


def _kit(read=True, findings=(), **kw) -> Outcome:
    return Outcome(read=read, findings=list(findings), **kw)


REFUSED_UNDAMAGED = Baseline(pylance_reads=False)


@pytest.mark.parametrize("kit,theirs,differ,base,want", [
    (_kit(crashed=True), _kit(), "", None, "problem"),
    (_kit(untyped=True), _kit(read=False), "", None, "problem"),
    (_kit(engine=["ENGINE-001: boom"]), _kit(), "", None, "problem"),
    (_kit(), _kit(), "column a row 3: 1 != 2", None, "misread"),
    (_kit(findings=["ENC-040"]), _kit(), "column a row 3: 1 != 2", None, "stricter"),
    (_kit(findings=["DATAFILE-002"]), _kit(), "column a row 3", Baseline(["DATAFILE-002"]), "misread"),
    (_kit(), _kit(read=False), "", None, "lenient"),
    (_kit(findings=["DATAFILE-002"]), _kit(read=False), "", Baseline(["DATAFILE-002"]), "lenient"),
    (_kit(findings=["FILE-015"]), _kit(read=False), "", None, "agree"),
    (_kit(read=False, findings=["FILE-015"]), _kit(read=False), "", None, "agree"),
    (_kit(read=False), _kit(), "", None, "stricter"),
    (_kit(), _kit(), "", None, "agree"),
    # pylance refuses the undamaged root: its refusal of a copy is no evidence
    (_kit(), _kit(read=False), "", REFUSED_UNDAMAGED, "agree"),
    (_kit(untyped=True), _kit(read=False), "", REFUSED_UNDAMAGED, "problem"),
])
def test_the_verdict_of_a_mutation(kit, theirs, differ, base, want):
    assert mu.verdict(kit, theirs, differ, base) == want


@pytest.fixture(scope="module")
def small_corpus(pylance, tmp_path_factory):
    """``<corpus>/pylance-14.0.2/<scenario>/table``: two tables pylance 14.0.2 wrote."""
    corpus = tmp_path_factory.mktemp("corpus")
    t = pa.table({"i": pa.array(range(2000), pa.int64()),
                  "s": pa.array([f"value {i}" for i in range(2000)]),
                  "l": pa.array([list(range(i % 5)) for i in range(2000)], pa.list_(pa.int32())),
                  # a dictionary per file: the rows of both readers come in batches whose
                  # dictionaries differ (an IPC file could not hold them)
                  "d": pa.chunked_array([pa.array(["a", "b"] * 500).dictionary_encode(),
                                         pa.array(["c", "d"] * 500).dictionary_encode()])})
    for scenario, version in (("types-2.0", "2.0"), ("types-2.2", "2.2")):
        root = corpus / "pylance-14.0.2" / scenario / "table"
        pylance.write_dataset(t, str(root), data_storage_version=version, max_rows_per_file=1000)
    # a second version with a deletion file and a transaction file
    pylance.dataset(str(corpus / "pylance-14.0.2" / "types-2.2" / "table")).delete("i % 7 = 0")
    return corpus


def test_targets_name_the_files_a_mutation_may_damage(small_corpus, tmp_path):
    v22 = small_corpus / "pylance-14.0.2" / "types-2.2" / "table"
    files = {t: [p.relative_to(v22).parts[0] for p in mu.target_files(v22, (t,))]
             for t in mu.TARGETS}
    assert set(files["data"]) == {"data"} and len(files["data"]) == 2
    assert set(files["manifest"]) == {"_versions"} and len(files["manifest"]) == 2
    assert set(files["deletion"]) == {"_deletions"} and set(files["transaction"]) == {"_transactions"}
    assert files["index"] == []
    assert files["latest"] == ["_versions"]
    assert mu.target_files(v22, ("latest",))[0] == max(mu.target_files(v22, ("manifest",)),
                                                      key=lambda p: -int(p.stem))  # v2 names
    every = mu.target_files(v22, (mu.ANY_TARGET,))
    assert set(mu.target_files(v22, tuple(mu.TARGETS))) <= set(every)
    # roots without a file of the targets are not drawn from
    assert [r.parent.name for r in mu.corpus_roots(small_corpus, targets=("deletion",))] == ["types-2.2"]
    rng = random.Random(3)
    for i in range(6):
        m = mu.mutate(v22, tmp_path / f"m{i}", rng, ("manifest", "deletion"))
        assert m.file.split("/")[0] in ("_versions", "_deletions")
        assert (tmp_path / f"m{i}" / m.file).read_bytes() != (v22 / m.file).read_bytes()


def test_the_same_seed_gives_the_same_damage(small_corpus, tmp_path):
    roots = mu.corpus_roots(small_corpus)
    assert [r.parent.name for r in roots] == ["types-2.0", "types-2.2"]
    seen = {}
    for attempt in ("a", "b"):
        rng = random.Random(5)
        for i in range(12):
            m = mu.mutate(roots[i % 2], tmp_path / f"{attempt}{i}", rng)
            damaged = (tmp_path / f"{attempt}{i}" / m.file).read_bytes()
            original = (roots[i % 2] / m.file).read_bytes()
            assert damaged != original, m
            if m.kind == "truncate":
                assert original.startswith(damaged) and len(damaged) == m.offsets[0]
            else:
                assert len(damaged) == len(original)
                changed = [k for k in range(len(original)) if damaged[k] != original[k]]
                assert min(changed) >= min(m.offsets) and max(changed) <= max(m.offsets) + 15
            if m.kind == "tail-flip":
                assert min(m.offsets) >= len(original) - mu.TAIL_BYTES
            seen.setdefault(i, []).append((m.file, m.kind, m.offsets, damaged))
    assert all(a == b for a, b in seen.values())
    assert {v[0][1] for v in seen.values()} >= {"flip", "tail-flip", "truncate"}


@pytest.mark.slow
def test_a_campaign_judges_every_mutation_and_passes_on_sound_kit(small_corpus, tmp_path, capsys):
    out = tmp_path / "judged.jsonl"
    code = main(["fixtures", "mutate", "--corpus", str(small_corpus), "--count", "4", "--seed", "2",
                 "--work", str(tmp_path / "work"), "--reader-python", sys.executable,
                 "--json", str(out)])
    printed = capsys.readouterr().out
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 4 and all(j["verdict"] in mu.VERDICTS for j in lines)
    assert not [j for j in lines if j["verdict"] in mu.FAILING], printed
    assert code == 0 and "4 mutations of 2 roots (seed 2)" in printed
    assert all(j["kit"]["read"] or j["kit"]["error"] or j["kit"]["findings"] for j in lines)


def test_a_field_edit_changes_one_value_and_keeps_the_file_parsing(small_corpus, tmp_path):
    """``field``: one protobuf field of a manifest or transaction file gets another value of
    the same encoded size; the bytes outside the message stay, the message still parses and
    differs in exactly that field. Other files get a flip instead."""
    from reference_impl.proto import table_pb2, transaction_pb2

    v22 = small_corpus / "pylance-14.0.2" / "types-2.2" / "table"
    rng = random.Random(8)
    seen = set()
    for i in range(12):
        m = mu.mutate(v22, tmp_path / f"f{i}", rng, ("manifest", "transaction"), ("field",))
        assert m.kind == "field" and ":" in m.detail and "->" in m.detail, m
        old, new = (v22 / m.file).read_bytes(), (tmp_path / f"f{i}" / m.file).read_bytes()
        assert len(old) == len(new) and old != new
        ((start, end, cls),) = [r for r in mu._message_regions(tmp_path / f"f{i}" / m.file, new)
                                if r[0] == m.offsets[0]]
        assert old[:start] == new[:start] and old[end:] == new[end:]
        before, after = cls.FromString(old[start:end]), cls.FromString(new[start:end])
        assert before != after and cls in (table_pb2.Manifest, transaction_pb2.Transaction)
        seen.add(m.file.split("/")[0])
    assert seen == {"_versions", "_transactions"}
    again = mu.mutate(v22, tmp_path / "again", random.Random(8), ("manifest", "transaction"),
                      ("field",))
    first = mu.mutate(v22, tmp_path / "first", random.Random(8), ("manifest", "transaction"),
                      ("field",))
    assert (again.file, again.detail) == (first.file, first.detail)
    # a 2.x data file: one column metadata message
    from reference_impl.proto import file2_pb2

    col = mu.mutate(v22, tmp_path / "d", random.Random(1), ("data",), ("field",))
    assert col.kind == "field" and col.file.startswith("data/")
    new = (tmp_path / "d" / col.file).read_bytes()
    ((start, end, cls),) = [r for r in mu._message_regions(tmp_path / "d" / col.file, new)
                            if r[0] == col.offsets[0]]
    assert cls is file2_pb2.ColumnMetadata
    assert cls.FromString(new[start:end]) != cls.FromString((v22 / col.file).read_bytes()[start:end])
    # a file that holds no protobuf message gets a flip
    flipped = mu.mutate(v22, tmp_path / "del", random.Random(1), ("deletion",), ("field",))
    assert flipped.kind == "flip" and not flipped.detail


@pytest.mark.parametrize("table", ["types-2.0", "types-2.2"])
def test_field_edits_reach_inside_the_page_encodings(small_corpus, tmp_path, table):
    """A 2.x page's encoding is a ``google.protobuf.Any`` serialized into a bytes field;
    field edits walk the message it packs (``ArrayEncoding`` of 2.0, ``PageLayout`` of
    2.1+) and write it back, so exactly one value inside the encoding changes."""
    from google.protobuf import any_pb2

    from reference_impl.proto import encodings_v2_0_pb2, encodings_v2_1_pb2, file2_pb2

    path = next((small_corpus / "pylance-14.0.2" / table / "table" / "data").glob("*.lance"))
    data = path.read_bytes()
    rng = random.Random(3)
    inner = []
    for _ in range(60):
        new, at, detail = mu.edit_field(path, data, rng)
        assert len(new) == len(data) and new != data
        if "<" in detail:
            inner.append((new, at, detail))
    assert len(inner) >= 5, "no edit reached inside a page encoding"
    layout = {"types-2.0": encodings_v2_0_pb2.ArrayEncoding,
              "types-2.2": encodings_v2_1_pb2.PageLayout}[table]
    for new, at, detail in inner:
        assert f"<{layout.DESCRIPTOR.name}>." in detail
        ((start, end, cls),) = [r for r in mu._message_regions(path, new) if r[0] == at]
        assert cls is file2_pb2.ColumnMetadata
        before = cls.FromString(data[start:end])
        after = cls.FromString(new[start:end])
        changed = [i for i, (a, b) in enumerate(zip(before.pages, after.pages, strict=True))
                   if a != b]
        assert len(changed) == 1 and before.encoding == after.encoding, detail
        a, b = before.pages[changed[0]], after.pages[changed[0]]
        assert (a.length, list(a.buffer_offsets)) == (b.length, list(b.buffer_offsets))
        ea = any_pb2.Any.FromString(a.encoding.direct.encoding)
        eb = any_pb2.Any.FromString(b.encoding.direct.encoding)
        assert ea.type_url == eb.type_url
        assert layout.FromString(ea.value) != layout.FromString(eb.value)


@pytest.mark.slow
def test_a_campaign_over_manifests_and_deletion_files(small_corpus, tmp_path, capsys):
    out = tmp_path / "judged.jsonl"
    code = main(["fixtures", "mutate", "--corpus", str(small_corpus), "--count", "4", "--seed", "4",
                 "--targets", "manifest,deletion", "--work", str(tmp_path / "work"),
                 "--reader-python", sys.executable, "--json", str(out)])
    printed = capsys.readouterr().out
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 4
    assert all(j["mutation"]["file"].split("/")[0] in ("_versions", "_deletions") for j in lines)
    assert not [j for j in lines if j["verdict"] in mu.FAILING], printed
    assert code == 0


def test_a_campaign_without_a_corpus_is_a_usage_error(tmp_path, capsys):
    assert main(["fixtures", "mutate", "--corpus", str(tmp_path), "--count", "1"]) == 2
    assert "build the corpus first" in capsys.readouterr().err
    assert main(["fixtures", "mutate", "--corpus", str(tmp_path), "--targets", "data,footer"]) == 2
    assert "unknown --targets footer" in capsys.readouterr().err
    assert main(["fixtures", "mutate", "--corpus", str(tmp_path), "--kinds", "flip,melt"]) == 2
    assert "unknown --kinds melt" in capsys.readouterr().err
