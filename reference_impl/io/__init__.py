"""Object stores: local file system, in-memory and S3, chosen by URI (see ``uri.py``)."""

from .base import DEFAULT_MAX_READ, ObjectInfo, ObjectStore, check_key, join_key

__all__ = ["DEFAULT_MAX_READ", "ObjectInfo", "ObjectStore", "check_key", "join_key"]
