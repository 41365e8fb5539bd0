"""Object ids, names and table directory names of the directory namespace (spec 002).

* A *name* is one level of an id: a namespace or table name. Names must be non-empty and
  must not contain ``/`` (a key separator: it would nest directories), ``$`` (the object
  id delimiter: ``x$y`` would be ambiguous), ``\\`` or NUL, and must not be ``.`` or ``..``
  or contain ``..`` (path escape). pylance 14.0.2 accepts several of these (REFS §9.6);
  this implementation refuses them with ``InvalidInput``.
* An *object id* is the path of names joined by ``$``: ``ns1$ns2$table``. The root
  namespace has the empty id ``[]`` and no row in ``__manifest``.
* V1 table directory (spec "V1: Directory Listing"): ``<table_name>.lance``.
* V2 table directory (spec "Manifest Table Directory"): ``<hash>_<object_id>``, where
  ``<hash>`` is 8 lowercase hex digits, random per create (REFS §9.2: it cannot be
  recomputed; readers take ``location`` from ``__manifest``).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence

from ..errors import InvalidInput

DELIMITER = "$"
V1_SUFFIX = ".lance"
MANIFEST_TABLE = "__manifest"
RESERVED_MARKER = ".lance-reserved"
DEREGISTERED_MARKER = ".lance-deregistered"
MARKER_CONTENT = b"reserved"

V2_DIR_PATTERN = re.compile(r"^(?P<hash>[0-9a-f]{8})_(?P<object_id>.+)$")
_FORBIDDEN = ("/", DELIMITER, "\\", "\x00")


def validate_name(name: str, *, what: str = "name") -> str:
    """``name`` if it is a valid namespace or table name, else ``InvalidInput``."""
    if not isinstance(name, str) or name == "":
        raise InvalidInput(f"{what} must be a non-empty string, got {name!r}")
    for ch in _FORBIDDEN:
        if ch in name:
            raise InvalidInput(f"{what} {name!r} must not contain {ch!r}")
    if ".." in name or name == ".":
        raise InvalidInput(f"{what} {name!r} must not be '.' or contain '..'")
    return name


def validate_id(parts: Sequence[str], *, allow_root: bool = False, what: str = "id") -> list[str]:
    """The id as a list of validated names. The root (``[]``) only when ``allow_root``."""
    if isinstance(parts, str) or not isinstance(parts, (list, tuple)):
        raise InvalidInput(f"{what} must be a list of names, got {parts!r}")
    parts = list(parts)
    if not parts and not allow_root:
        raise InvalidInput(f"{what} must have at least one name")
    for p in parts:
        validate_name(p, what=f"{what} part")
    return parts


def object_id(parts: Sequence[str]) -> str:
    """The ``$``-joined object id of ``parts`` (already validated)."""
    return DELIMITER.join(parts)


def split_object_id(oid: str) -> list[str]:
    """The names of an object id (the inverse of :func:`object_id`)."""
    return oid.split(DELIMITER) if oid else []


def parent_object_id(oid: str) -> str:
    """The object id of the parent namespace; ``""`` for the root."""
    return oid.rsplit(DELIMITER, 1)[0] if DELIMITER in oid else ""


def random_hash() -> str:
    """8 random lowercase hex digits (REFS §9.2: any random value is acceptable)."""
    return secrets.token_hex(4)


def v1_directory(name: str) -> str:
    """``<table_name>.lance``."""
    return f"{name}{V1_SUFFIX}"


def v2_directory(oid: str, hash_: str | None = None) -> str:
    """``<hash>_<object_id>``."""
    return f"{hash_ or random_hash()}_{oid}"


def v1_table_name(directory: str) -> str | None:
    """The table name of a V1 directory name, None when it is not ``<name>.lance``."""
    if not directory.endswith(V1_SUFFIX):
        return None
    name = directory[: -len(V1_SUFFIX)]
    try:
        validate_name(name)
    except InvalidInput:
        return None
    return name


def check_relative_location(location: str) -> str:
    """``location`` if it is a relative path inside the root, else ``InvalidInput``:
    no scheme, not absolute, no empty, ``.`` or ``..`` segment, no backslash or NUL."""
    if not isinstance(location, str) or not location:
        raise InvalidInput(f"location must be a non-empty relative path, got {location!r}")
    if "://" in location or location.startswith("/") or re.match(r"^[A-Za-z]:", location):
        raise InvalidInput(f"location {location!r} is not relative: absolute paths and URIs "
                           "are not allowed")
    if "\\" in location or "\x00" in location:
        raise InvalidInput(f"location {location!r} contains a backslash or NUL")
    for seg in location.rstrip("/").split("/"):
        if seg in ("", ".", ".."):
            raise InvalidInput(f"location {location!r} has an empty, '.' or '..' segment")
    return location.rstrip("/")
