"""Object stores: local file system, in-memory and S3, chosen by URI (see ``uri.py``).

``open_store(uri, storage_options)`` returns the store rooted at ``uri``; the S3 store
(``s3.py``, on boto3) is imported only when an ``s3://`` URI is opened.
"""

from .base import DEFAULT_MAX_READ, ObjectInfo, ObjectStore, check_key, join_key
from .uri import normalize_uri, open_store

__all__ = [
    "DEFAULT_MAX_READ", "ObjectInfo", "ObjectStore", "check_key", "join_key",
    "normalize_uri", "open_store",
]
