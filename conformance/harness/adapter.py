"""The adapter protocol: how the harness talks to an implementation under test.

An implementation is plugged in as an *adapter* with two capabilities it may declare:

* ``read`` -- open a dataset URI (optionally at a version) and return its logical rows as
  a pyarrow Table (``with_row_id`` asks for the ``_rowid`` column as well);
* ``write`` -- apply one *operation* of an operation script to a URI. The operations
  (see :mod:`conformance.harness.scenarios` for their JSON form) are ``create``,
  ``append``, ``overwrite``, ``delete``, ``update``, ``add_columns``, ``merge``,
  ``merge_insert``, ``drop_columns``, ``compact``, ``tag``, ``restore``, ``update_config``.

An adapter whose ``Capabilities.features`` include ``"filtered-read"`` also implements
``read_filtered(uri, version, filter, columns)``: the rows a filter (the Lance filter
language, :mod:`reference_impl.predicate`) holds for, only the ``columns`` listed (in their
order; all when None). Writer scenarios and generated scripts hold such reads as ``read``
steps; an adapter without the feature is never asked one (the case is UNSUPPORTED).

An adapter whose ``Capabilities.features`` include ``"blobs"`` also implements
``take_blobs(uri, version, column, indices)``: the bytes of a blob column at scan positions
(``None`` for a null blob), which the golden cases with blob columns check.

``Capabilities.time_travel`` (default true) says the adapter reads any version of a table;
an adapter that reads only the latest declares it false: the harness then reads each
table's latest version with ``version=None`` first and judges it, and a read of an older
version answered :class:`Unsupported` is listed as not made instead of making the case
UNSUPPORTED.

``Capabilities.ops`` lists the write operations the adapter supports; an operation
outside it is judged UNSUPPORTED, never FAIL. ``Capabilities.types`` (column kinds of
:data:`conformance.strategies.schemas.KINDS`) and ``Capabilities.storage_versions`` (data
storage versions such as ``"2.1"``) narrow what ``lance-conformance fuzz`` generates; None
(the default) means every one. An adapter may also raise
:class:`Unsupported` from ``read``/``apply`` for a feature it does not have (for example a
data type), which the runner records the same way.

Adapters are named for ``lance-conformance run --impl``:

* ``reference`` and ``pylance`` -- the built-in adapters;
* ``module:Class`` -- any importable class implementing this protocol;
* a name registered in the entry point group ``lance_conformance.adapters``;
* ``cmd:"<command line>"`` -- a subprocess speaking ``PROTOCOL.md``.
"""

from __future__ import annotations

import importlib
import shlex
from dataclasses import dataclass, field

import pyarrow as pa

ALL_OPS = ("create", "append", "overwrite", "delete", "update", "add_columns", "merge",
           "merge_insert", "drop_columns", "compact", "tag", "restore", "update_config")
#: The feature an adapter declares when it answers filtered reads (:meth:`Adapter.read_filtered`).
FILTERED_READ = "filtered-read"
ENTRY_POINT_GROUP = "lance_conformance.adapters"


class Unsupported(Exception):
    """Raised by an adapter for an operation or feature it does not implement."""


class ImplementationError(Exception):
    """An error the implementation reported for a request, with ``error_class``: its kind in
    the reference implementation's names where one fits (``UnsupportedFeature``,
    ``FormatError``, ``CommitConflict``, ``NotFound``, ``InvalidInput``), else free text."""

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class
        self.detail = message


class Crashed(Exception):
    """The implementation crashed on a request: its process died (``exit_code``: the exit
    status, negative for the signal that killed it, with the last lines of its stderr), or
    it reported a panic it survived (``panic``: error class ``Panic``, or a Python
    ``PanicException``). A crash is never a refusal: a must-reject case it ends is a FAIL,
    "refused by crashing"."""

    exit_code: int | None = None
    stderr_tail: tuple[str, ...] = ()
    panic: bool = False

    @property
    def signal(self) -> int | None:
        return -self.exit_code if self.exit_code is not None and self.exit_code < 0 else None

    def describe(self) -> str:
        """``refused by crashing: ...`` with the signal or exit status and the stderr tail."""
        if self.panic:
            what = f"a panic ({_first_line(str(self))})"
        elif self.signal is not None:
            what = f"the process was killed by signal {self.signal} ({_signal_name(self.signal)})"
        elif self.exit_code is not None:
            what = f"the process exited with status {self.exit_code}"
        else:
            what = f"the process died ({_first_line(str(self))})"
        tail = ""
        if self.stderr_tail:
            tail = "; last lines of its stderr:\n" + "\n".join(f"  | {line}" for line in self.stderr_tail)
        return f"refused by crashing: {what}{tail}"


class ProtocolBroken(Exception):
    """The program broke the protocol (a response that is not one) or did not answer within
    the time limit (it was stopped). Never a refusal."""


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + "..."


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: The error classes of the protocol (``PROTOCOL.md``), the reference implementation's names.
ERROR_CLASSES = ("UnsupportedFeature", "FormatError", "CommitConflict", "NotFound", "InvalidInput")


def error_class(exc: BaseException) -> str:
    """The protocol's error class of ``exc``: the class a program reported, a panic as
    ``Panic``, the first of :data:`ERROR_CLASSES` among the exception's classes, a text
    naming a conflict as ``CommitConflict``, else the exception's own class name."""
    if getattr(exc, "panic", False) or type(exc).__name__ == "PanicException":
        return "Panic"
    if getattr(exc, "error_class", None):
        return str(exc.error_class)
    for cls in type(exc).__mro__:
        if cls.__name__ in ERROR_CLASSES:
            return cls.__name__
    if "conflict" in str(exc).lower():
        return "CommitConflict"
    return type(exc).__name__


def failure_kind(exc: BaseException) -> str:
    """How a request that raised ``exc`` ended: ``"unsupported"`` (:class:`Unsupported`),
    ``"crash"`` (:class:`Crashed`, a Python ``PanicException``, an error of class
    ``Panic``), ``"protocol"`` (:class:`ProtocolBroken`) or ``"error"`` (an error the
    implementation reported: a refusal, right or wrong)."""
    if isinstance(exc, Unsupported):
        return "unsupported"
    if isinstance(exc, Crashed) or error_class(exc) == "Panic":
        return "crash"
    if isinstance(exc, ProtocolBroken):
        return "protocol"
    return "error"


def crash_text(exc: BaseException) -> str:
    """``refused by crashing: ...`` for an exception :func:`failure_kind` calls a crash."""
    if isinstance(exc, Crashed):
        return exc.describe()
    return f"refused by crashing: a panic ({_first_line(f'{type(exc).__name__}: {exc}')})"


@dataclass(frozen=True)
class Capabilities:
    """What an adapter declares it can do."""

    read: bool = True
    write: bool = False
    ops: tuple[str, ...] = ()
    row_ids: bool = False  # read can return ``_rowid`` (stable row ids)
    features: tuple[str, ...] = field(default_factory=tuple)  # free-form, e.g. "legacy"
    types: tuple[str, ...] | None = None  # column kinds handled (None: all)
    storage_versions: tuple[str, ...] | None = None  # data storage versions (None: all)
    time_travel: bool = True  # reads any version; False: the latest only (version None)

    def supports(self, op: str) -> bool:
        return self.write and op in self.ops

    def as_dict(self) -> dict:
        out = {"read": self.read, "write": self.write, "ops": list(self.ops),
               "row_ids": self.row_ids, "features": list(self.features),
               "time_travel": self.time_travel}
        if self.types is not None:
            out["types"] = list(self.types)
        if self.storage_versions is not None:
            out["storage_versions"] = list(self.storage_versions)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> Capabilities:
        return cls(read=bool(d.get("read", False)), write=bool(d.get("write", False)),
                   ops=tuple(d.get("ops", ())), row_ids=bool(d.get("row_ids", False)),
                   features=tuple(d.get("features", ())),
                   time_travel=bool(d.get("time_travel", True)),
                   types=tuple(d["types"]) if d.get("types") is not None else None,
                   storage_versions=(tuple(d["storage_versions"])
                                     if d.get("storage_versions") is not None else None))


class Adapter:
    """Base class of adapters. Subclasses set ``name``/``capabilities`` and override
    :meth:`read` and/or :meth:`apply`."""

    name: str = "adapter"
    version: str | None = None  # the implementation's version, named in every report
    capabilities: Capabilities = Capabilities()

    def read(self, uri: str, version: int | None = None, *, with_row_id: bool = False) -> pa.Table:
        raise Unsupported(f"{self.name} cannot read")

    def take_blobs(self, uri: str, version: int | None, column: str, indices: list[int]) -> list:
        """The bytes of blob ``column`` at scan positions ``indices`` (``None`` for a null blob);
        declared by the feature ``"blobs"``."""
        raise Unsupported(f"{self.name} cannot read blob bytes")

    def query(self, uri: str, version: int | None, query: dict) -> pa.Table:
        """The rows answering ``query`` (:mod:`conformance.harness.queries`: a ``filter``, a
        ``nearest`` search or a full-text ``match``, ``use_index``) at ``version``; declared by
        the feature ``"query"`` (``"full-text"`` for ``match``)."""
        raise Unsupported(f"{self.name} answers no query")

    def read_filtered(self, uri: str, version: int | None, filter: str | None,  # noqa: A002
                      columns: list[str] | None = None) -> pa.Table:
        """The rows of ``uri`` at ``version`` that ``filter`` is true for (null counts as
        false), with the ``columns`` listed, in that order (every column when None);
        declared by the feature ``"filtered-read"``."""
        raise Unsupported(f"{self.name} makes no filtered read")

    def apply(self, uri: str, op: dict, data: pa.Table | None = None) -> None:
        """Apply one operation ``op`` (its JSON form) to the dataset at ``uri``;
        ``data`` is the Arrow table the operation carries (create/append/overwrite/merge/
        merge_insert)."""
        raise Unsupported(f"{self.name} cannot write")

    def versions(self, uri: str) -> list[int]:
        """The version numbers of the dataset's main branch; the default asks the
        reference reader (an adapter may override with its own view)."""
        from reference_impl.dataset import open_dataset

        return list(open_dataset(uri).versions())

    def close(self) -> None:
        """Release what the adapter holds (a subprocess, ...)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


#: The built-in adapters: each name stands for a ``module:attribute`` spec, resolved when the
#: adapter is loaded, exactly as a ``module:Class`` given on the command line. The adapter
#: modules build on this one (the protocol); this module never imports them.
BUILTIN: dict[str, str] = {
    "reference": "conformance.harness.reference:ReferenceAdapter",
    "pylance": "conformance.harness.pylance_adapter:PylanceAdapter",
}
#: ``known-bad:NAME`` -- the adapter class ``KNOWN_BAD[NAME]`` of that module (harness self-test).
KNOWN_BAD = "conformance.harness.known_bad:KNOWN_BAD"
#: ``cmd:"<command line>"`` -- this class, constructed with the command's argument list.
SUBPROCESS = "conformance.harness.subprocess_adapter:SubprocessAdapter"


def _resolve(target: str):
    """The object a ``module:attribute`` spec names."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _builtin(name: str) -> Adapter | None:
    if name in BUILTIN:
        return _resolve(BUILTIN[name])()
    if name.startswith("known-bad:"):
        cls = _resolve(KNOWN_BAD).get(name.split(":", 1)[1])
        return cls() if cls else None
    return None


def load_adapter(spec: str) -> Adapter:
    """The adapter named by ``spec`` (see the module docstring). Raises ValueError."""
    spec = spec.strip()
    if spec.startswith("cmd:"):
        command = spec[4:].strip()
        if len(command) >= 2 and command[0] == command[-1] and command[0] in "\"'":
            command = command[1:-1]
        return _resolve(SUBPROCESS)(shlex.split(command))
    found = _builtin(spec)
    if found is not None:
        return found
    if ":" in spec:
        try:
            obj = _resolve(spec)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"cannot load adapter {spec!r}: {exc}") from None
        return obj() if isinstance(obj, type) else obj
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == spec:
            obj = ep.load()
            return obj() if isinstance(obj, type) else obj
    raise ValueError(f"unknown adapter {spec!r}: use reference, pylance, module:Class, "
                     f"an entry point of {ENTRY_POINT_GROUP} or cmd:\"...\"")
