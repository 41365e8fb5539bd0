"""Every path and file name of a Lance dataset (spec 000 "Storage Layout", FACTS §A).

Layout of a dataset root::

    {root}/
        data/{name}.lance                               data files
        _versions/{v}.manifest                          manifest, V1 naming
        _versions/{2**64-1-v:020}.manifest              manifest, V2 naming (29 characters)
        _versions/d{v}.manifest                         detached version (bit 63 of v set)
        _versions/latest_version_hint.json              {"version":N}, pylance only
        _transactions/{read_version}-{uuid}.txn         raw Transaction protobuf
        _deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}
        _indices/{uuid}/...                             index files
        _refs/tags/{encoded name}.json                  tags
        _refs/branches/{encoded name}.json              branches
        tree/{branch}/...                               a branch dataset (same layout)

Manifest names: a name ending in ``.manifest`` whose stem is a decimal u64 is a version.
A 29-character name (20 digits + ``.manifest``) is V2 and holds ``2**64-1-v``; any other
length is V1 and holds ``v``. ``d{v}.manifest`` is a detached version. Names that do not
parse (``zzz.manifest``, a 20-digit stem above the u64 range, the staging leftovers
``{final}-{uuid}`` and ``{final}#N``) are ignored by readers.

Data file names: the 16 bytes of a UUID, bytes 0-2 as 24 binary digits then bytes 3-15 as
26 lowercase hex digits, then ``.lance`` (56 characters).

Ref names go through the object-store path encoding (REFS-NAMESPACE-COMMIT §1): ``/`` becomes
``%2F`` and every byte of non-ASCII UTF-8 is percent-encoded, as are a few ASCII characters
the object-store path rules forbid in a path segment. Tag names (§2.2) and branch names (§3.2)
have their own validity rules, enforced by :func:`validate_tag_name` and
:func:`validate_branch_name`.
"""

from __future__ import annotations

import re

from ..errors import InvalidInput

U64_MAX = (1 << 64) - 1
DETACHED_BIT = 1 << 63

DATA_DIR = "data"
VERSIONS_DIR = "_versions"
TRANSACTIONS_DIR = "_transactions"
DELETIONS_DIR = "_deletions"
INDICES_DIR = "_indices"
REFS_DIR = "_refs"
TAGS_DIR = "_refs/tags"
BRANCHES_DIR = "_refs/branches"
TREE_DIR = "tree"
VERSION_HINT_NAME = "latest_version_hint.json"
VERSION_HINT_KEY = f"{VERSIONS_DIR}/{VERSION_HINT_NAME}"

MANIFEST_SUFFIX = ".manifest"
V2_NAME_LENGTH = 29  # 20 digits + ".manifest"

SCHEME_V1 = "v1"
SCHEME_V2 = "v2"
SCHEME_DETACHED = "detached"


# -- manifests -----------------------------------------------------------------

def _check_version(v: int) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > U64_MAX:
        raise InvalidInput(f"version {v!r} is not a u64")
    return v


def manifest_name_v1(v: int) -> str:
    """``{v}.manifest``."""
    return f"{_check_version(v)}{MANIFEST_SUFFIX}"


def manifest_name_v2(v: int) -> str:
    """``{2**64-1-v:020}.manifest``: newer versions sort first in a lexical listing."""
    return f"{U64_MAX - _check_version(v):020d}{MANIFEST_SUFFIX}"


def detached_manifest_name(v: int) -> str:
    """``d{v}.manifest`` for a detached version."""
    return f"d{_check_version(v)}{MANIFEST_SUFFIX}"


def is_detached_version(v: int) -> bool:
    """Detached versions are random u64 numbers with bit 63 set."""
    return v >= DETACHED_BIT


def _parse_u64(text: str) -> int | None:
    if not text or not text.isascii() or not text.isdigit():
        return None
    n = int(text)
    return n if n <= U64_MAX else None


def parse_manifest_name(name: str) -> tuple[int, str] | None:
    """``(version, scheme)`` of a file name in ``_versions/``, or None if it is no manifest.

    ``scheme`` is ``"v1"``, ``"v2"`` or ``"detached"``.
    """
    if not isinstance(name, str) or not name.endswith(MANIFEST_SUFFIX):
        return None
    stem = name[: -len(MANIFEST_SUFFIX)]
    if stem.startswith("d"):
        n = _parse_u64(stem[1:])
        return None if n is None else (n, SCHEME_DETACHED)
    n = _parse_u64(stem)
    if n is None:
        return None
    if len(name) == V2_NAME_LENGTH:
        return U64_MAX - n, SCHEME_V2
    return n, SCHEME_V1


def manifest_key(v: int, scheme: str) -> str:
    """The key under the dataset root of version ``v`` named with ``scheme``."""
    if scheme == SCHEME_V2:
        return f"{VERSIONS_DIR}/{manifest_name_v2(v)}"
    if scheme == SCHEME_V1:
        return f"{VERSIONS_DIR}/{manifest_name_v1(v)}"
    if scheme == SCHEME_DETACHED:
        return f"{VERSIONS_DIR}/{detached_manifest_name(v)}"
    raise InvalidInput(f"unknown manifest naming scheme {scheme!r}")


# -- data files ----------------------------------------------------------------

_DATA_FILE_RE = re.compile(r"^[01]{24}[0-9a-f]{26}\.lance$")


def data_file_name(uuid_bytes: bytes) -> str:
    """The data file name of a 16-byte UUID: 24 binary + 26 hex digits + ``.lance``."""
    if not isinstance(uuid_bytes, (bytes, bytearray)) or len(uuid_bytes) != 16:
        raise InvalidInput("a data file name needs exactly 16 UUID bytes")
    binary = "".join(f"{b:08b}" for b in uuid_bytes[:3])
    return f"{binary}{bytes(uuid_bytes[3:]).hex()}.lance"


def is_data_file_name(name: str) -> bool:
    """True when ``name`` has the form :func:`data_file_name` produces."""
    return isinstance(name, str) and _DATA_FILE_RE.match(name) is not None


def data_file_uuid(name: str) -> bytes | None:
    """The UUID bytes a conventional data file name encodes, else None."""
    if not is_data_file_name(name):
        return None
    head = int(name[:24], 2).to_bytes(3, "big")
    return head + bytes.fromhex(name[24:50])


# -- deletion files ------------------------------------------------------------

DELETION_EXTENSIONS = {0: "arrow", 1: "bin"}  # DeletionFile.DeletionFileType
_EXTENSION_TYPES = {v: k for k, v in DELETION_EXTENSIONS.items()}
_DELETION_RE = re.compile(r"^(\d+)-(\d+)-(\d+)\.(arrow|bin)$")


def _deletion_ext(file_type) -> str:
    if isinstance(file_type, str):
        key = file_type.lower()
        if key in _EXTENSION_TYPES:
            return key
        if key in ("arrow_array",):
            return "arrow"
        if key in ("bitmap",):
            return "bin"
    elif isinstance(file_type, int) and file_type in DELETION_EXTENSIONS:
        return DELETION_EXTENSIONS[file_type]
    raise InvalidInput(f"unknown deletion file type {file_type!r}")


def deletion_file_name(fragment_id: int, read_version: int, id: int, file_type) -> str:  # noqa: A002
    """``{fragment_id}-{read_version}-{id}.{arrow|bin}``; ``file_type`` 0/"arrow" or 1/"bin"."""
    return f"{int(fragment_id)}-{int(read_version)}-{int(id)}.{_deletion_ext(file_type)}"


def parse_deletion_file_name(name: str) -> tuple[int, int, int, int] | None:
    """``(fragment_id, read_version, id, file_type)`` of a deletion file name, else None."""
    m = _DELETION_RE.match(name) if isinstance(name, str) else None
    if not m:
        return None
    nums = [int(g) for g in m.groups()[:3]]
    if any(n > U64_MAX for n in nums):
        return None
    return nums[0], nums[1], nums[2], _EXTENSION_TYPES[m.group(4)]


# -- transaction files ---------------------------------------------------------

_TXN_RE = re.compile(r"^(\d+)-(.+)\.txn$")


def transaction_file_name(read_version: int, uuid: str) -> str:
    """``{read_version}-{uuid}.txn``."""
    if not isinstance(uuid, str) or not uuid or "/" in uuid:
        raise InvalidInput(f"bad transaction uuid {uuid!r}")
    return f"{_check_version(read_version)}-{uuid}.txn"


def parse_transaction_file_name(name: str) -> tuple[int, str] | None:
    """``(read_version, uuid)`` of a transaction file name, else None."""
    m = _TXN_RE.match(name) if isinstance(name, str) else None
    if not m or "/" in name:
        return None
    n = int(m.group(1))
    return (n, m.group(2)) if n <= U64_MAX else None


# -- branches ------------------------------------------------------------------

def branch_prefix(branch: str | None) -> str:
    """The key prefix of a branch dataset below the main root (``""`` for main)."""
    if branch in (None, "", "main"):
        return ""
    return f"{TREE_DIR}/{branch}"


# -- ref names -----------------------------------------------------------------

# ASCII characters the object-store path-segment encoding escapes, besides controls.
_ESCAPED_ASCII = set('/\\{^}%`]">[~<#|')


def encode_ref_name(name: str) -> str:
    """The file-name stem of a ref: ``/`` -> ``%2F``, non-ASCII percent-encoded as UTF-8."""
    out = []
    for ch in name:
        if ch.isascii() and ch.isprintable() and ch not in _ESCAPED_ASCII and ch != "\x7f":
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out)


_PCT_RE = re.compile(r"%([0-9A-Fa-f]{2})")


def decode_ref_name(stem: str) -> str:
    """Inverse of :func:`encode_ref_name` (strict UTF-8; raises InvalidInput otherwise)."""
    raw = bytearray()
    i = 0
    while i < len(stem):
        m = _PCT_RE.match(stem, i)
        if m:
            raw.append(int(m.group(1), 16))
            i = m.end()
        else:
            raw.extend(stem[i].encode("utf-8"))
            i += 1
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"ref file name {stem!r} is not percent-encoded UTF-8") from exc


def tag_key(name: str) -> str:
    return f"{TAGS_DIR}/{encode_ref_name(name)}.json"


def branch_key(name: str) -> str:
    return f"{BRANCHES_DIR}/{encode_ref_name(name)}.json"


def _ref_char_ok(ch: str) -> bool:
    return ch.isalnum() or ch in ".-_"


def validate_tag_name(name: str) -> str:
    """Return ``name`` if it is a valid tag name (REFS §2.2), else raise InvalidInput."""
    if not isinstance(name, str) or name == "":
        raise InvalidInput("Ref is invalid: Ref cannot be empty")
    if not all(_ref_char_ok(c) for c in name):
        raise InvalidInput(
            f"Ref is invalid: {name!r}: Ref characters must be either alphanumeric, '.', '-' or '_'")
    if name.startswith("."):
        raise InvalidInput(f"Ref is invalid: {name!r}: Ref cannot begin with a dot")
    if name.endswith("."):
        raise InvalidInput(f"Ref is invalid: {name!r}: Ref cannot end with a dot")
    if ".." in name:
        raise InvalidInput(f"Ref is invalid: {name!r}: Ref cannot have two consecutive dots")
    if name.endswith(".lock"):
        raise InvalidInput(f"Ref is invalid: {name!r}: Ref cannot end with .lock")
    return name


def validate_branch_name(name: str) -> str:
    """Return ``name`` if it is a valid branch name (REFS §3.2), else raise InvalidInput."""
    if not isinstance(name, str) or name == "":
        raise InvalidInput("Ref is invalid: Branch name cannot be empty")
    if name == "main":
        raise InvalidInput('Ref is invalid: "main" is reserved for the default branch')
    if name.startswith("/") or name.endswith("/"):
        raise InvalidInput(f"Ref is invalid: {name!r}: Branch name cannot begin or end with '/'")
    if "//" in name:
        raise InvalidInput(f"Ref is invalid: {name!r}: Branch name cannot contain '//'")
    if ".." in name or "\\" in name:
        raise InvalidInput(f"Ref is invalid: {name!r}: Branch name cannot contain '..' or '\\'")
    if name.endswith(".lock"):
        raise InvalidInput(f"Ref is invalid: {name!r}: Branch name cannot end with .lock")
    for segment in name.split("/"):
        if not all(_ref_char_ok(c) for c in segment):
            raise InvalidInput(
                f"Ref is invalid: {name!r}: Ref characters must be either alphanumeric, '.', '-' or '_'")
    return name
