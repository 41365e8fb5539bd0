"""Run moto's server with conditional S3 writes switched off: the UNSAFE negative control.

``python -m conformance.servers.motoserver_unsafe -H 127.0.0.1 -p PORT`` takes moto_server's
arguments. Before the server starts it wraps ``S3Response.setup_class`` (moto 5.x), the
method that copies each incoming request's headers onto the response handler, so that
``If-None-Match`` and ``If-Match`` are dropped. Every ``PutObject`` then overwrites, and
a create-if-absent "succeeds" for every racing writer, exactly like s3rver or an old
MinIO: a store on which concurrent Lance commits silently lose data.
"""

from __future__ import annotations

_DROPPED = ("If-None-Match", "If-Match")


def patch_moto() -> None:
    """Make moto's S3 ignore the conditional-write headers (idempotent)."""
    from moto.s3.responses import S3Response
    from werkzeug.datastructures import Headers

    if getattr(S3Response.setup_class, "_lance_conformance_unsafe", False):
        return
    original = S3Response.setup_class

    # moto 5.2.1 takes (request, full_url, headers); 5.2.5 makes full_url and headers optional
    def setup_class(self, *args, **kwargs):
        original(self, *args, **kwargs)
        copied = Headers(list(self.headers.items()))
        for name in _DROPPED:
            copied.remove(name)
        self.headers = copied

    setup_class._lance_conformance_unsafe = True  # type: ignore[attr-defined]
    S3Response.setup_class = setup_class


def main(argv: list[str] | None = None) -> None:
    patch_moto()
    from moto.server import main as moto_main

    moto_main(argv)


if __name__ == "__main__":
    main()
