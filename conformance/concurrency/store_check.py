"""Store qualification: is this object store safe for concurrent Lance commits?

Every Lance commit ends in one create-if-absent of the next version's manifest
(REFS-NAMESPACE-COMMIT.md, section 8.1): on S3 a ``PUT`` with ``If-None-Match: *``
that must fail with 412 when the manifest exists (8.3); on a local file system a
``link`` that fails with ``EEXIST`` (8.2). A store that lets two writers both "create"
the same manifest silently loses one of the commits -- ENVIRONMENT.md saw 54 of 80
successful pylance appends lost against a server that ignores conditional headers.
Servers differ here (moto checks without a lock, s3rver ignores the header, MinIO's
SDK cannot send it), so a store is qualified before it is trusted.

:func:`check_store` runs, under a temporary prefix ``_lance_conformance_check/<uuid>/``
of the store, which it removes afterwards:

``reachable``
    a probe object is written and read back; a failure here makes the verdict
    ``UNREACHABLE`` (exit code 2) and nothing else runs.
``refuses-existing``
    a second ``put_if_not_exists`` on an existing key must be refused and must leave
    the first object unchanged. A store that accepts it ignores conditional writes.
``atomic-create``
    ``clients`` writers, each with a store of its own, race ``put_if_not_exists`` on
    one fresh key per round, released together by a barrier, for ``rounds`` rounds.
    Exactly one writer must win each round, and the object must hold the winner's
    bytes. Two winners in any round make the store UNSAFE.
``list-after-write``
    objects are listed right after they are written and after one is deleted; a
    listing that misses a new object or still shows a deleted one would hide a
    committed version from readers (version discovery lists ``_versions/``).
``ranged-reads``
    ranges of a pseudo-random object (start, middle, end, one byte) must return exactly
    those bytes, and a range past the end must be refused, not cut short.

On an S3 store, a second client that shares no code with boto3 -- the MinIO Python SDK
(:mod:`conformance.concurrency.second_client`) -- then reads back what boto3 wrote, as a reader in
another language would:

``second-client-listing``
    objects written by boto3 are all listed, with their sizes, through ``ListObjectsV2``
    pages of a few keys each (the listing must really take several pages);
``second-client-ranged-reads``
    the same ranges as ``ranged-reads``, and the whole object, byte for byte; an offset
    past the end is refused;
``second-client-metadata``
    size and ETag from ``HeadObject`` agree with boto3's ``HeadObject``, with the listing
    and (single-part uploads) with the MD5 of the bytes written.

On other stores these are one ``second-client`` entry marked skipped ("not an S3 store").

The verdict is ``SAFE`` when every check passes, ``UNSAFE`` otherwise (with one reason
per failed check), ``UNREACHABLE`` when the store cannot be used at all.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field

from reference_impl.errors import AlreadyExists, FormatError, LanceError, NotFound, StoreError
from reference_impl.io.base import ObjectStore
from reference_impl.io.local import LocalStore
from reference_impl.io.uri import open_store

CHECK_PREFIX = "_lance_conformance_check"

SAFE = "SAFE"
UNSAFE = "UNSAFE"
UNREACHABLE = "UNREACHABLE"

EXIT_CODES = {SAFE: 0, UNSAFE: 1, UNREACHABLE: 2}

# One racing writer may wait this long for its answer before the round counts as hung.
ROUND_TIMEOUT_S = 60.0


@dataclass
class CheckResult:
    """The outcome of one check: its name, whether it passed, and what was seen."""

    name: str
    passed: bool
    detail: str
    skipped: bool = False  # not applicable to this store; counts as passed


@dataclass
class StoreReport:
    """Everything :func:`check_store` found about one store."""

    uri: str
    verdict: str
    clients: int
    rounds: int
    checks: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0
    leftover_keys: int = 0

    @property
    def reasons(self) -> list[str]:
        return [f"{c.name}: {c.detail}" for c in self.checks if not c.passed and not c.skipped]

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict:
        out = asdict(self)
        out["reasons"] = self.reasons
        out["exit_code"] = self.exit_code
        return out

    def render(self) -> str:
        lines = [f"store: {self.uri}",
                 f"clients: {self.clients}, rounds: {self.rounds}, {self.seconds:.1f} s"]
        for c in self.checks:
            mark = "skip" if c.skipped else "pass" if c.passed else "FAIL"
            lines.append(f"  [{mark}] {c.name}: {c.detail}")
        if self.leftover_keys:
            lines.append(f"  warning: {self.leftover_keys} temporary key(s) could not be removed")
        lines.append(f"verdict: {self.verdict}")
        lines.extend(f"  reason: {r}" for r in self.reasons)
        return "\n".join(lines)


# -- the checks ------------------------------------------------------------------------

def _check_reachable(store: ObjectStore) -> CheckResult:
    payload = b"lance-conformance probe"
    store.put("probe", payload)
    back = store.get("probe", max_size=1024)
    if back != payload:
        return CheckResult("reachable", False, f"read back {back[:40]!r} instead of the probe")
    store.delete("probe")
    return CheckResult("reachable", True, "wrote, read and deleted a probe object")


def _check_refuses_existing(store: ObjectStore) -> CheckResult:
    name = "refuses-existing"
    store.put_if_not_exists("exists/key", b"first")
    try:
        store.put_if_not_exists("exists/key", b"second")
    except AlreadyExists:
        pass
    else:
        now = store.get("exists/key", max_size=1024)
        return CheckResult(name, False, "a second create-if-absent on an existing key succeeded "
                           f"(the object now holds {now!r}): conditional writes are ignored")
    now = store.get("exists/key", max_size=1024)
    if now != b"first":
        return CheckResult(name, False, f"the create was refused but the object changed to {now!r}")
    return CheckResult(name, True, "a second create-if-absent was refused, the object kept its bytes")


def _check_atomic_create(stores: list[ObjectStore], rounds: int) -> CheckResult:
    name = "atomic-create"
    clients = len(stores)
    multi: list[str] = []
    none: list[int] = []
    wrong: list[str] = []
    errors: list[str] = []
    for round_no in range(rounds):
        key = f"race/{round_no}.manifest"
        barrier = threading.Barrier(clients)

        def attempt(i: int, key: str = key, barrier: threading.Barrier = barrier,
                    round_no: int = round_no) -> str:
            try:
                barrier.wait(timeout=ROUND_TIMEOUT_S)
            except threading.BrokenBarrierError:
                return "error: barrier broken"
            try:
                stores[i].put_if_not_exists(key, f"client-{i}-round-{round_no}".encode())
            except AlreadyExists:
                return "lost"
            except LanceError as exc:
                return f"error: {type(exc).__name__}: {exc}"
            return "won"

        with ThreadPoolExecutor(clients) as pool:
            futures = [pool.submit(attempt, i) for i in range(clients)]
            outcomes: list[str] = []
            for fut in futures:
                try:
                    outcomes.append(fut.result(timeout=ROUND_TIMEOUT_S))
                except FutureTimeout:
                    outcomes.append(f"error: no answer within {ROUND_TIMEOUT_S:.0f} s")
                    barrier.abort()
        winners = [i for i, o in enumerate(outcomes) if o == "won"]
        errors.extend(f"round {round_no}: {o[7:]}" for o in outcomes if o.startswith("error"))
        if len(winners) > 1:
            multi.append(f"round {round_no}: {len(winners)} winners")
        elif not winners:
            none.append(round_no)
        else:
            try:
                now = stores[0].get(key, max_size=1024)
            except (NotFound, StoreError, FormatError) as exc:
                now = f"<{type(exc).__name__}>".encode()
            expected = f"client-{winners[0]}-round-{round_no}".encode()
            if now != expected:
                wrong.append(f"round {round_no}: holds {now!r}, the winner wrote {expected!r}")
    problems: list[str] = []
    if multi:
        problems.append(f"more than one writer created the same key in {len(multi)} of {rounds} "
                        f"rounds ({'; '.join(multi[:5])}): concurrent commits can be lost")
    if wrong:
        problems.append("the object does not hold the sole winner's bytes (" + "; ".join(wrong[:3]) + ")")
    if none:
        problems.append(f"no writer won in {len(none)} round(s): commits could never progress")
    if errors:
        problems.append(f"{len(errors)} writer error(s), e.g. {errors[0]}")
    if problems:
        return CheckResult(name, False, "; ".join(problems))
    return CheckResult(name, True, f"exactly one of {clients} racing writers won each of {rounds} rounds")


def _check_list_after_write(store: ObjectStore, count: int = 20) -> CheckResult:
    name = "list-after-write"
    expected: dict[str, int] = {}
    missing_rounds: list[str] = []
    for i in range(count):
        key = f"listing/{i:04d}.manifest"
        store.put(key, b"m" * (i + 1))
        expected[key] = i + 1
        seen = {info.key: info.size for info in store.list("listing/")}
        if seen != expected:
            lost = sorted(set(expected) - set(seen))
            extra = sorted(set(seen) - set(expected))
            sizes = sorted(k for k in expected if k in seen and seen[k] != expected[k])
            missing_rounds.append(f"after writing {key}: missing {lost[:3]}, unexpected {extra[:3]}, "
                                  f"wrong sizes {sizes[:3]}")
    gone = "listing/0000.manifest"
    store.delete(gone)
    del expected[gone]
    seen = {info.key: info.size for info in store.list("listing/")}
    if gone in seen:
        missing_rounds.append(f"{gone} still listed after its delete")
    if missing_rounds:
        return CheckResult(name, False, "listings lag behind writes: " + "; ".join(missing_rounds[:3]))
    return CheckResult(name, True, f"{count} writes and one delete were listed at once")


def _check_ranged_reads(store: ObjectStore) -> CheckResult:
    name = "ranged-reads"
    import numpy as np

    size = 200_003
    data = np.random.default_rng(20240601).integers(0, 256, size, dtype=np.uint8).tobytes()
    store.put("ranges/object", data)
    bad: list[str] = []
    for start, length in [(0, 1), (0, 16), (size - 16, 16), (size - 1, 1), (65_536, 70_000),
                          (12_345, 1), (0, size)]:
        got = store.get_range("ranges/object", start, length)
        if got != data[start:start + length]:
            bad.append(f"bytes {start}+{length} differ ({len(got)} bytes returned)")
    for start, length in [(size - 10, 20), (size + 5, 1)]:
        try:
            got = store.get_range("ranges/object", start, length)
        except FormatError:
            continue
        bad.append(f"range {start}+{length} past the end returned {len(got)} bytes instead of an error")
    if bad:
        return CheckResult(name, False, "; ".join(bad))
    return CheckResult(name, True, "7 ranges matched byte for byte, 2 out-of-bounds ranges refused")


# -- the second client -----------------------------------------------------------------

SECOND_CLIENT_CHECKS = ("second-client-listing", "second-client-ranged-reads",
                        "second-client-metadata")
LISTING_OBJECTS = 12  # written by boto3, listed by the second client ...
LISTING_PAGE = 4      # ... in pages of this many keys (so at least 3 pages)


def _guarded(name: str, fn: Callable[[], CheckResult]) -> CheckResult:
    """Run one second-client check; any error of the other client's stack is a failure."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - S3Error, urllib3 errors, ...: all findings
        return CheckResult(name, False, f"{type(exc).__name__}: {exc}"[:500])


def _check_second_client_listing(store, sc) -> CheckResult:
    import math

    from . import second_client

    name = "second-client-listing"
    written = {f"second-client/list/{i:03d}": 7 * i + 1 for i in range(LISTING_OBJECTS)}
    for key, size in written.items():
        store.put(key, bytes([len(key) % 251]) * size)
    full = f"{store.prefix}/second-client/list/"
    before = sc.log.count("GET", "list-type=2")
    listed = {o.key: o.size for o in second_client.list_prefix(sc, store.bucket, full,
                                                                 page_size=LISTING_PAGE)}
    pages = sc.log.count("GET", "list-type=2") - before
    expected = {f"{store.prefix}/{k}": v for k, v in written.items()}
    problems = []
    if listed != expected:
        missing = sorted(set(expected) - set(listed))
        extra = sorted(set(listed) - set(expected))
        sizes = sorted(k for k in expected if k in listed and listed[k] != expected[k])
        problems.append(f"missing {missing[:3]}, unexpected {extra[:3]}, wrong sizes {sizes[:3]}")
    need = math.ceil(LISTING_OBJECTS / LISTING_PAGE)
    if pages < need:
        problems.append(f"the listing took {pages} request(s), expected at least {need} pages "
                        f"of {LISTING_PAGE} keys (pagination was not exercised)")
    if problems:
        return CheckResult(name, False, "; ".join(problems))
    return CheckResult(name, True, f"{LISTING_OBJECTS} objects written by boto3 listed with sizes "
                       f"by the MinIO SDK in {pages} pages of at most {LISTING_PAGE} keys")


def _check_second_client_ranges(store, sc, data: bytes) -> CheckResult:
    from . import second_client

    name = "second-client-ranged-reads"
    key = f"{store.prefix}/second-client/ranges"
    size = len(data)
    bad = []
    ranges = [(0, 1), (0, 16), (size - 16, 16), (size - 1, 1), (65_536, 70_000), (12_345, 1)]
    for start, length in ranges:
        try:
            got = second_client.get_bytes(sc, store.bucket, key, start, length)
        except Exception as exc:  # noqa: BLE001 - the SDK's S3Error and transport errors
            bad.append(f"bytes {start}+{length} could not be read: {type(exc).__name__}: "
                       f"{str(exc)[:120]}")
            continue
        if got != data[start:start + length]:
            bad.append(f"bytes {start}+{length} differ ({len(got)} bytes returned)")
    whole = second_client.get_bytes(sc, store.bucket, key)
    if whole != data:
        bad.append(f"the whole object differs ({len(whole)} of {size} bytes)")
    try:
        got = second_client.get_bytes(sc, store.bucket, key, size + 5, 1)
    except Exception as exc:  # noqa: BLE001 - the SDK's S3Error (InvalidRange, 416)
        if "InvalidRange" not in str(exc) and "416" not in str(exc):
            bad.append(f"an offset past the end failed oddly: {type(exc).__name__}: {exc}"[:300])
    else:
        bad.append(f"an offset past the end returned {len(got)} bytes instead of an error")
    if bad:
        return CheckResult(name, False, "; ".join(bad))
    return CheckResult(name, True, f"{len(ranges)} ranges and the whole object written by boto3 "
                       "read back byte for byte by the MinIO SDK; an offset past the end refused")


def _check_second_client_metadata(store, sc, data: bytes) -> CheckResult:
    import hashlib

    from reference_impl.io.s3 import make_s3_client

    from . import second_client

    name = "second-client-metadata"
    boto = make_s3_client(store.storage_options, pool_size=2)
    keys = {f"{store.prefix}/second-client/ranges": data}
    for i in (0, LISTING_OBJECTS - 1):
        k = f"second-client/list/{i:03d}"
        keys[f"{store.prefix}/{k}"] = bytes([len(k) % 251]) * (7 * i + 1)
    listed = {o.key: o for o in second_client.list_prefix(
        sc, store.bucket, f"{store.prefix}/second-client/")}
    bad = []
    for key, body in keys.items():
        st = sc.client.stat_object(store.bucket, key)
        head = boto.head_object(Bucket=store.bucket, Key=key)
        etag = (st.etag or "").strip('"')
        boto_etag = str(head.get("ETag", "")).strip('"')
        md5 = hashlib.md5(body, usedforsecurity=False).hexdigest()
        if int(st.size) != len(body) or int(head["ContentLength"]) != len(body):
            bad.append(f"{key}: size {st.size} (MinIO SDK), {head['ContentLength']} (boto3), "
                       f"{len(body)} written")
        if etag != boto_etag:
            bad.append(f"{key}: ETag {etag!r} (MinIO SDK) but {boto_etag!r} (boto3)")
        elif etag != md5:
            bad.append(f"{key}: ETag {etag!r} is not the MD5 {md5} of a single-part upload")
        if key not in listed or listed[key].etag != etag or listed[key].size != len(body):
            bad.append(f"{key}: the listing shows {listed.get(key)}")
    if bad:
        return CheckResult(name, False, "; ".join(bad[:4]))
    return CheckResult(name, True, f"size and ETag of {len(keys)} objects agree between the MinIO "
                       "SDK, boto3, the listing and the MD5 of the bytes written")


def second_client_checks(store: ObjectStore) -> list[CheckResult]:
    """The second client's read-back checks (see the module docstring) on ``store``."""
    from reference_impl.io.s3 import S3Store

    from . import second_client

    if not isinstance(store, S3Store):
        return [CheckResult("second-client", True, "not an S3 store: no second S3 client to "
                            "compare with", skipped=True)]
    reason = second_client.available()
    if reason is not None:
        return [CheckResult(n, False, reason) for n in SECOND_CLIENT_CHECKS]
    try:
        sc = second_client.minio_client(store.storage_options)
    except LanceError as exc:
        return [CheckResult(n, False, f"the MinIO SDK cannot use these storage options: {exc}")
                for n in SECOND_CLIENT_CHECKS]
    import numpy as np

    data = np.random.default_rng(20240602).integers(0, 256, 200_003, dtype=np.uint8).tobytes()
    try:
        store.put("second-client/ranges", data)
    except LanceError as exc:
        return [CheckResult(n, False, f"boto3 could not write the test object: {exc}")
                for n in SECOND_CLIENT_CHECKS]
    return [
        _guarded(SECOND_CLIENT_CHECKS[0], lambda: _check_second_client_listing(store, sc)),
        _guarded(SECOND_CLIENT_CHECKS[1], lambda: _check_second_client_ranges(store, sc, data)),
        _guarded(SECOND_CLIENT_CHECKS[2], lambda: _check_second_client_metadata(store, sc, data)),
    ]


# -- driver ----------------------------------------------------------------------------

def _cleanup(store: ObjectStore) -> int:
    """Delete every key under the check's prefix; return how many are still listed.

    On a local file system the emptied directories are removed too (object stores
    have no directories to remove).
    """
    try:
        for info in list(store.list()):
            store.delete(info.key)
        left = sum(1 for _ in store.list())
    except LanceError:
        return -1
    if isinstance(store, LocalStore) and left == 0:
        run_dir = store.root
        for dirpath, _dirs, _files in sorted(os.walk(run_dir), key=lambda t: -len(t[0])):
            with contextlib.suppress(OSError):
                os.rmdir(dirpath)
        with contextlib.suppress(OSError):
            os.rmdir(run_dir.parent)  # _lance_conformance_check/, if no other run uses it
    return left


def check_store(
    target: str | ObjectStore,
    storage_options: dict[str, str] | None = None,
    *,
    clients: int = 8,
    rounds: int = 20,
    cleanup: bool = True,
    store_factory: Callable[[], ObjectStore] | None = None,
) -> StoreReport:
    """Qualify the store at ``target`` (a URI or an open store); see the module docstring.

    With a URI, every racing client opens a store of its own (its own connections),
    as separate writers would. With an open store, all clients share it unless
    ``store_factory`` makes one per client.
    """
    if clients < 2:
        raise ValueError("clients must be at least 2 to race")
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    run = f"{CHECK_PREFIX}/{uuid.uuid4()}"
    if isinstance(target, str):
        def factory() -> ObjectStore:
            return open_store(target, storage_options).child(run)
    elif store_factory is not None:
        def factory() -> ObjectStore:
            return store_factory().child(run)
    else:
        shared = target.child(run)

        def factory() -> ObjectStore:
            return shared

    started = time.monotonic()
    try:
        store = factory()
    except StoreError as exc:
        report = StoreReport(str(target), UNREACHABLE, clients, rounds)
        report.checks.append(CheckResult("reachable", False, str(exc)))
        return report
    report = StoreReport(store.uri.rsplit(f"/{run}", 1)[0], SAFE, clients, rounds)
    try:
        try:
            report.checks.append(_check_reachable(store))
        except (StoreError, NotFound, FormatError) as exc:
            report.checks.append(CheckResult("reachable", False, f"{type(exc).__name__}: {exc}"))
            report.verdict = UNREACHABLE
            cleanup = False  # nothing was written, and every request would fail again
            return report
        if not report.checks[-1].passed:
            report.verdict = UNSAFE
            return report
        steps: list[tuple[str, Callable[[], CheckResult]]] = [
            ("refuses-existing", lambda: _check_refuses_existing(store)),
            ("atomic-create", lambda: _check_atomic_create([factory() for _ in range(clients)], rounds)),
            ("list-after-write", lambda: _check_list_after_write(store)),
            ("ranged-reads", lambda: _check_ranged_reads(store)),
        ]
        for name, step in steps:
            try:
                report.checks.append(step())
            except (StoreError, NotFound, FormatError, AlreadyExists) as exc:
                report.checks.append(CheckResult(name, False, f"{type(exc).__name__}: {exc}"))
        report.checks.extend(second_client_checks(store))
        if not all(c.passed for c in report.checks):
            report.verdict = UNSAFE
    finally:
        if cleanup:
            left = _cleanup(store)
            report.leftover_keys = max(left, 0) if left >= 0 else 1
        report.seconds = time.monotonic() - started
    return report
