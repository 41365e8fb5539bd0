"""A readable, pure-Python reference implementation of the Lance table and file format.

Public API (mirroring pylance's names where both have the operation)::

    open_dataset(uri, version=None, *, branch=None, storage_options=None) -> Dataset
    write_dataset(data, uri, mode="create", ...) -> Dataset

This package never imports ``lance`` (pylance); pylance is the oracle of the tests only.
"""

from __future__ import annotations

from .errors import (
    AlreadyExists,
    CommitConflict,
    FormatError,
    InvalidInput,
    LanceError,
    NotFound,
    PathEscape,
    StoreError,
    UnsupportedFeature,
)

__all__ = [
    "AlreadyExists",
    "CommitConflict",
    "FormatError",
    "InvalidInput",
    "LanceError",
    "NotFound",
    "PathEscape",
    "StoreError",
    "UnsupportedFeature",
    "commit",
    "open_dataset",
    "write_dataset",
]

__version__ = "0.1.0"

# The Dataset's operations (ds.delete(...), ...) are registered by dataset_ops, which builds on
# the dataset and the writer; importing it here makes them available whatever module of this
# package is imported first.
from . import dataset_ops as _dataset_ops  # noqa: E402,F401


def open_dataset(uri, version=None, *, branch=None, storage_options=None):
    """Open a Lance dataset at ``uri`` (see :func:`reference_impl.dataset.open_dataset`)."""
    from .dataset import open_dataset as _open

    return _open(uri, version, branch=branch, storage_options=storage_options)


def commit(uri, transaction, **kwargs):
    """Commit an externally built ``Transaction`` (see :func:`reference_impl.write.commit`)."""
    from .write import commit as _commit

    return _commit(uri, transaction, **kwargs)


def write_dataset(data, uri, mode="create", **kwargs):
    """Write ``data`` as a Lance dataset (see :func:`reference_impl.write.write_dataset`)."""
    from .write import write_dataset as _write

    return _write(data, uri, mode=mode, **kwargs)
