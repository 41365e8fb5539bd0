"""Typed errors of the directory namespace (spec 002).

Each one subclasses the generic error of :mod:`reference_impl.errors` it refines, so a
caller may catch either ``TableNotFound`` or the broader ``NotFound``:

==========================  ===================  ======================================
error                       refines              raised when
==========================  ===================  ======================================
``NamespaceNotFound``       ``NotFound``         a namespace (or a table's parent) is absent
``TableNotFound``           ``NotFound``         the table id names no table
``NamespaceAlreadyExists``  ``AlreadyExists``    ``create_namespace`` of an existing id
``TableAlreadyExists``      ``AlreadyExists``    create/declare/register of an existing id,
                                                 including the loser of a concurrent create
``NamespaceNotEmpty``       ``InvalidInput``     ``drop_namespace`` of a namespace that has
                                                 tables or child namespaces
``UnsupportedOperation``    ``InvalidInput``     an operation the configuration does not
                                                 allow (child namespaces without manifest)
==========================  ===================  ======================================

Invalid names (``/``, ``$``, ``..``, empty) are plain ``InvalidInput``.
"""

from __future__ import annotations

from ..errors import AlreadyExists, InvalidInput, NotFound


class NamespaceNotFound(NotFound):
    """The namespace does not exist."""


class TableNotFound(NotFound):
    """The table does not exist in the namespace."""


class NamespaceAlreadyExists(AlreadyExists):
    """A namespace with this id exists already."""


class TableAlreadyExists(AlreadyExists):
    """A table with this id exists already (or another writer created it first)."""


class NamespaceNotEmpty(InvalidInput):
    """Only an empty namespace may be dropped."""


class UnsupportedOperation(InvalidInput):
    """The operation is not available in this configuration."""
