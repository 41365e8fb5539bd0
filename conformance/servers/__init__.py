"""Local S3-compatible servers for tests: moto (S3 + DynamoDB), SeaweedFS, s3rver.

Each server binds 127.0.0.1 on free ports, keeps its data in its own temporary
directory, and exposes ``endpoint``, its credentials, ``storage_options()`` (the same
dict works for pylance and for :class:`reference_impl.io.s3.S3Store`), ``client()``
and ``create_bucket(name)``. ``start()`` raises :class:`ServerUnavailable` when the
binary is missing or the server does not come up; ``stop()`` ends it.

================================  ====================================================
class                             conditional writes (``If-None-Match: *``)
================================  ====================================================
``MotoServer()``                  enforced, not atomic under tight races
``MotoServer(ignore_conditional_  ignored: the UNSAFE negative control
writes=True)``
``SeaweedFSServer()``             enforced and atomic
``S3rverServer()``                ignored (npm package, installed separately)
``MinioEndpoint(url, ...)``       a MinIO server run by somebody else, given by its
                                  endpoint (``minio_from_env()``); not started here
================================  ====================================================

:mod:`.node_adapter` installs the npm modules of the LanceDB Node SDK adapter (an
implementation under test in JavaScript) the same way s3rver is installed.
"""

from ._process import LocalServer, ServerUnavailable, free_port
from .minio_endpoint import MinioEndpoint, minio_from_env
from .motoserver import MotoServer
from .s3rver import S3rverServer, find_s3rver, install_s3rver
from .seaweedfs import SeaweedFSServer

__all__ = [
    "LocalServer", "MinioEndpoint", "MotoServer", "S3rverServer", "SeaweedFSServer",
    "ServerUnavailable", "find_s3rver", "free_port", "install_s3rver", "minio_from_env",
]
