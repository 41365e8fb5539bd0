"""A MinIO server that somebody else runs, given by its endpoint.

No registry reachable from these machines ships a MinIO server (only the ``minio`` client
SDK is on PyPI), so the suite cannot start one. When a user or a CI with MinIO sets

    LANCE_CONFORMANCE_MINIO_ENDPOINT=http://127.0.0.1:9000
    LANCE_CONFORMANCE_MINIO_ACCESS_KEY=...   (default minioadmin)
    LANCE_CONFORMANCE_MINIO_SECRET_KEY=...   (default minioadmin)
    LANCE_CONFORMANCE_MINIO_REGION=...       (default us-east-1)

the endpoint tests run against that server; otherwise they run against the suite's own
SeaweedFS, given to them by its URL in the same way (so CI skips nothing).
:class:`MinioEndpoint` offers the same interface as the servers the suite starts itself
(``endpoint``, ``storage_options()``, ``client()``, ``create_bucket()``); ``start()`` only
checks that the server answers, and ``stop()`` leaves it running.
"""

from __future__ import annotations

import os

from ._process import LocalServer, ServerUnavailable

ENV_ENDPOINT = "LANCE_CONFORMANCE_MINIO_ENDPOINT"
ENV_ACCESS_KEY = "LANCE_CONFORMANCE_MINIO_ACCESS_KEY"
ENV_SECRET_KEY = "LANCE_CONFORMANCE_MINIO_SECRET_KEY"
ENV_REGION = "LANCE_CONFORMANCE_MINIO_REGION"

NOT_GIVEN = (f"no MinIO server given: set {ENV_ENDPOINT}=http://HOST:PORT (and {ENV_ACCESS_KEY}, "
             f"{ENV_SECRET_KEY}); no registry reachable here ships a MinIO server to start")


class MinioEndpoint(LocalServer):
    """An already running MinIO (or any S3) server at ``endpoint``."""

    name = "minio"

    def __init__(self, endpoint: str, access_key: str = "minioadmin", secret_key: str = "minioadmin",
                 region: str = "us-east-1") -> None:
        super().__init__()
        if not endpoint.startswith(("http://", "https://")):
            raise ServerUnavailable(f"{ENV_ENDPOINT} must be an http:// or https:// URL, "
                                    f"not {endpoint!r}")
        self._endpoint = endpoint.rstrip("/")
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region

    @property
    def endpoint(self) -> str:
        return self._endpoint

    def start(self) -> MinioEndpoint:
        """Check that the server answers ``ListBuckets`` with these credentials."""
        try:
            self.client("s3").list_buckets()
        except Exception as exc:  # noqa: BLE001 - every failure is the same finding
            raise ServerUnavailable(f"MinIO at {self._endpoint} does not answer: "
                                    f"{type(exc).__name__}: {exc}") from exc
        return self

    def stop(self) -> None:
        """Nothing to stop: the server is not ours."""

    @property
    def running(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"MinioEndpoint({self._endpoint})"


def minio_from_env() -> MinioEndpoint | None:
    """The MinIO server named by the environment (see the module docstring), or None."""
    endpoint = os.environ.get(ENV_ENDPOINT, "").strip()
    if not endpoint:
        return None
    return MinioEndpoint(endpoint, os.environ.get(ENV_ACCESS_KEY, "minioadmin"),
                         os.environ.get(ENV_SECRET_KEY, "minioadmin"),
                         os.environ.get(ENV_REGION, "us-east-1"))
