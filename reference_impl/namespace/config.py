"""Configuration of the directory namespace (spec 002, "Configuration").

=======================  ========  ==========================================================
property                 default   meaning
=======================  ========  ==========================================================
``root``                 required  the namespace directory: a URI (``s3://bucket/prefix``,
                                   ``file:///abs``), an absolute POSIX path, or a relative
                                   one resolved against the working directory ("Root Path")
``manifest_enabled``     ``true``  use the ``__manifest`` table (V2)
``dir_listing_enabled``  ``true``  also find root tables as ``<name>.lance`` directories (V1)
``storage.*``            none      passed to the object store with the prefix removed
                                   ("Storage Options": ``storage.region`` -> ``region``)
=======================  ========  ==========================================================

Both switches on is the *compatibility mode*. Values may be strings (``"true"``,
``"false"``), as pylance takes them, or booleans. A trailing ``/`` on ``root`` is stripped
(REFS §9.1). Other properties pylance accepts (``inline_optimization_enabled``,
``commit_retries`` ...) are kept in :attr:`NamespaceConfig.extra`; ``commit_retries`` bounds
the ``__manifest`` commit loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlparse

from ..errors import InvalidInput

STORAGE_PREFIX = "storage."
DEFAULT_COMMIT_RETRIES = 20


def parse_bool(value, key: str) -> bool:
    """``true``/``false`` (any case) or a bool; anything else is ``InvalidInput``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise InvalidInput(f"{key} must be true or false, got {value!r}")


def resolve_root(root) -> str:
    """The root as a URI (kept) or an absolute local path (relative paths resolved
    against the working directory); a trailing ``/`` removed."""
    if isinstance(root, os.PathLike):
        root = os.fspath(root)
    if not isinstance(root, str) or not root.strip():
        raise InvalidInput(f"root must be a non-empty path or URI, got {root!r}")
    scheme = urlparse(root).scheme.lower()
    if scheme and scheme != "file" and len(scheme) > 1:
        return root.rstrip("/") or root
    if scheme == "file":
        return root.rstrip("/") if root.rstrip("/") != "file://" else root
    return os.path.abspath(root)


def split_storage_options(options: dict | None) -> dict[str, str]:
    """Storage options with any ``storage.`` prefix removed."""
    out: dict[str, str] = {}
    for k, v in (options or {}).items():
        key = k[len(STORAGE_PREFIX):] if k.startswith(STORAGE_PREFIX) else k
        out[key] = v
    return out


@dataclass(frozen=True)
class NamespaceConfig:
    root: str
    manifest_enabled: bool = True
    dir_listing_enabled: bool = True
    storage_options: dict[str, str] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def commit_retries(self) -> int:
        raw = self.extra.get("commit_retries", DEFAULT_COMMIT_RETRIES)
        try:
            n = int(raw)
        except (TypeError, ValueError):
            raise InvalidInput(f"commit_retries must be an integer, got {raw!r}") from None
        if n < 0:
            raise InvalidInput("commit_retries must not be negative")
        return n

    @classmethod
    def from_properties(cls, properties: dict) -> NamespaceConfig:
        """The configuration from spec-named properties (``root``, ``manifest_enabled``,
        ``dir_listing_enabled``, ``storage.*``, others kept in ``extra``)."""
        props = dict(properties)
        if "root" not in props:
            raise InvalidInput("the 'root' property is required")
        root = resolve_root(props.pop("root"))
        manifest = parse_bool(props.pop("manifest_enabled", True), "manifest_enabled")
        listing = parse_bool(props.pop("dir_listing_enabled", True), "dir_listing_enabled")
        storage = {k[len(STORAGE_PREFIX):]: str(v) for k, v in props.items()
                   if k.startswith(STORAGE_PREFIX)}
        extra = {k: str(v) for k, v in props.items() if not k.startswith(STORAGE_PREFIX)}
        if not manifest and not listing:
            raise InvalidInput("at least one of manifest_enabled and dir_listing_enabled "
                               "must be true")
        return cls(root, manifest, listing, storage, extra)
