"""Choosing an object store by URI, with storage options named as pylance names them.

=========================  ==========================================
URI                        store
=========================  ==========================================
``/abs/path``              :class:`~.local.LocalStore`
``rel/path``               LocalStore, resolved against the working directory
``file:///abs/path``       LocalStore
``memory://name/prefix``   :class:`~.memory.MemoryStore`, shared per name in this process
``s3://bucket/prefix``     ``S3Store`` (see ``s3.py``)
=========================  ==========================================

Storage options (pylance's names): ``aws_endpoint``, ``aws_region``,
``aws_access_key_id``, ``aws_secret_access_key``, ``aws_session_token``, ``allow_http``.
"""

from __future__ import annotations

import os
import threading
from urllib.parse import unquote, urlparse

from ..errors import InvalidInput
from .base import ObjectStore
from .local import LocalStore
from .memory import MemoryStore, _Bucket

_memory_buckets: dict[str, _Bucket] = {}
_memory_lock = threading.Lock()


def _memory_store(name: str, prefix: str) -> MemoryStore:
    with _memory_lock:
        bucket = _memory_buckets.setdefault(name, _Bucket())
    store = MemoryStore(name, _bucket=bucket)
    return store.child(prefix) if prefix else store


def open_store(uri: str, storage_options: dict[str, str] | None = None) -> ObjectStore:
    """The store rooted at ``uri``."""
    if not isinstance(uri, str) or not uri:
        raise InvalidInput(f"not a dataset URI: {uri!r}")
    opts = dict(storage_options or {})
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        path = unquote(parsed.path) if scheme == "file" else uri
        return LocalStore(os.path.abspath(path))
    if scheme == "memory":
        return _memory_store(parsed.netloc, parsed.path.strip("/"))
    if scheme in ("s3", "s3a"):
        from .s3 import S3Store

        return S3Store(parsed.netloc, parsed.path.strip("/"), opts)
    raise InvalidInput(f"unsupported URI scheme {scheme!r} in {uri!r}")


def normalize_uri(uri: str) -> str:
    """A canonical form of ``uri``: absolute local paths become ``/abs`` (no scheme)."""
    parsed = urlparse(uri)
    if parsed.scheme.lower() in ("", "file"):
        path = unquote(parsed.path) if parsed.scheme else uri
        return os.path.abspath(path)
    return uri.rstrip("/")
