"""Typed errors of the reference implementation.

Bytes read from a store are untrusted. Every decoding problem surfaces as a
:class:`FormatError` that names the rule it breaks (an ``AREA-NNN`` id from the
rule catalog, or ``None`` when no rule applies), the file, and the byte offset
where the problem was found, never as a bare ``IndexError`` or ``DecodeError``.
"""

from __future__ import annotations


class LanceError(Exception):
    """Base class of every error raised by ``reference_impl``."""


class FormatError(LanceError):
    """Bytes on disk do not follow the format.

    ``rule`` is the catalog id of the broken rule (e.g. ``"MANIFEST-002"``),
    ``path`` the file and ``offset`` the byte position, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        rule: str | None = None,
        path: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.message = message
        self.rule = rule
        self.path = path
        self.offset = offset
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.rule:
            where.append(self.rule)
        if self.path:
            where.append(self.path)
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        prefix = f"[{', '.join(where)}] " if where else ""
        return f"{prefix}{self.message}"

    def __reduce__(self):  # keep rule/path/offset across process boundaries (Spark, xdist)
        return (_rebuild, (type(self), self.message, self.rule, self.path, self.offset))


def _rebuild(cls, message, rule, path, offset):
    return cls(message, rule=rule, path=path, offset=offset)


class UnsupportedFeature(FormatError):
    """The data uses something this implementation must refuse: an unknown reader or
    writer feature flag, an unknown encoding, an unknown transaction operation."""


class UnsupportedIndex(UnsupportedFeature):
    """An index kind, index version or index file layout this implementation does not read.
    ``kind`` names the index kind (``btree``, ``vector``, ...) and ``version`` the layout, when
    known. Refused, never guessed at."""

    def __init__(self, message: str, *, kind: str | None = None, version: str | None = None,
                 rule: str | None = None, path: str | None = None,
                 offset: int | None = None) -> None:
        self.kind = kind
        self.version = version
        super().__init__(message, rule=rule, path=path, offset=offset)

    def __reduce__(self):
        return (_rebuild_unsupported_index,
                (self.message, self.kind, self.version, self.rule, self.path, self.offset))


def _rebuild_unsupported_index(message, kind, version, rule, path, offset):
    return UnsupportedIndex(message, kind=kind, version=version, rule=rule, path=path,
                            offset=offset)


class PathEscape(FormatError):
    """A path taken from metadata leaves the directory it must stay in (``..``,
    an absolute path where a relative one is required, a NUL byte)."""


class NotFound(LanceError):
    """A dataset, version, file, tag or branch does not exist."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class AlreadyExists(LanceError):
    """A create-if-absent found the object already there (the commit point's loser)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class StoreError(LanceError):
    """The object store failed or cannot be reached (not a format problem)."""


class InvalidInput(LanceError, ValueError):
    """The caller asked for something invalid: a bad name, schema, predicate or option."""


class CommitConflict(LanceError):
    """A commit lost against a concurrent transaction.

    ``retryable`` is True when the writer may rebuild its change on the new version
    and try again, False when the transactions are incompatible.
    """

    def __init__(self, message: str, *, retryable: bool, other_version: int | None = None) -> None:
        self.retryable = retryable
        self.other_version = other_version
        super().__init__(message)
