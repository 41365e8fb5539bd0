"""The Lance directory namespace (spec 002): V1 directory listing, V2 ``__manifest`` table,
compatibility mode and V1 -> V2 migration.

Public API::

    ns = DirectoryNamespace(root, manifest_enabled=True, dir_listing_enabled=True,
                            storage_options=None)          # or DirectoryNamespace.from_properties({...})
    ns.create_namespace(["sales"], properties={"owner": "me"})
    ns.create_table(["sales", "orders"], pa.table({"a": [1]}), mode="create")
    ns.list_tables(["sales"]); ns.describe_table(["sales", "orders"]).table_uri
    ns.declare_table(id); ns.register_table(id, location); ns.deregister_table(id)
    ns.rename_table(id, new_id); ns.drop_table(id)
    ns.list_namespaces(id); ns.describe_namespace(id); ns.drop_namespace(id)
    ns.migrate()                                            # V1 directories -> __manifest

Modules: :mod:`.config` (properties), :mod:`.ids` (names, object ids, directory names),
:mod:`.v1` (directory listing), :mod:`.v2` (the ``__manifest`` table and its commits),
:mod:`.compat` (compatibility-mode merge rules), :mod:`.directory` (the class),
:mod:`.errors` (typed errors).
"""

from .config import NamespaceConfig
from .directory import DirectoryNamespace, NamespaceDescription, TableDescription
from .errors import (
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    NamespaceNotFound,
    TableAlreadyExists,
    TableNotFound,
    UnsupportedOperation,
)
from .v2 import ConcurrentModification


def connect(properties: dict) -> DirectoryNamespace:
    """A namespace from spec-named properties (``root``, ``manifest_enabled``,
    ``dir_listing_enabled``, ``storage.*``)."""
    return DirectoryNamespace.from_properties(properties)


__all__ = ["ConcurrentModification", "DirectoryNamespace", "NamespaceAlreadyExists",
           "NamespaceConfig", "NamespaceDescription", "NamespaceNotEmpty", "NamespaceNotFound",
           "TableAlreadyExists", "TableDescription", "TableNotFound", "UnsupportedOperation",
           "connect"]
