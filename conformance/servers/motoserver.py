"""moto's stand-alone server (``moto_server``): S3 and DynamoDB on one local port.

moto 5.2 enforces ``If-None-Match: *`` on ``PutObject`` (412 when the key exists) but
checks and writes without a lock, so a tight race can still have two winners
(ENVIRONMENT.md): good for fast tests, no proof of atomicity. It also serves
DynamoDB, the external manifest store of ``s3+ddb://`` (REFS-NAMESPACE-COMMIT.md 8.4).

``MotoServer(ignore_conditional_writes=True)`` starts the same server through
:mod:`conformance.servers.motoserver_unsafe`, which strips the conditional headers from
every S3 request: a store that silently overwrites, the negative control that the
store qualification (``check-store``) must call UNSAFE.
"""

from __future__ import annotations

import sys

from ._process import LocalServer


class MotoServer(LocalServer):
    """``python -m moto.server -H 127.0.0.1 -p PORT`` in a temporary directory."""

    name = "moto"

    def __init__(self, *, ignore_conditional_writes: bool = False) -> None:
        super().__init__()
        self.ignore_conditional_writes = ignore_conditional_writes
        if ignore_conditional_writes:
            self.name = "moto-unsafe"

    def _command(self) -> list[str]:
        module = "conformance.servers.motoserver_unsafe" if self.ignore_conditional_writes else "moto.server"
        return [sys.executable, "-m", module, "-H", "127.0.0.1", "-p", str(self.port)]

    def _environment(self) -> dict[str, str]:
        # moto reads credentials from nowhere; these keep boto3 inside moto from looking up real ones.
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "MOTO_PORT": str(self.port)}

    def create_dynamodb_table(self, name: str) -> str:
        """The external manifest store's table: HASH ``base_uri`` (S), RANGE ``version`` (N)."""
        ddb = self.client("dynamodb")
        ddb.create_table(
            TableName=name,
            KeySchema=[
                {"AttributeName": "base_uri", "KeyType": "HASH"},
                {"AttributeName": "version", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "base_uri", "AttributeType": "S"},
                {"AttributeName": "version", "AttributeType": "N"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
        return name

    def storage_options(self) -> dict[str, str]:
        """S3 options plus ``dynamodb_endpoint`` (used by pylance's ``s3+ddb://``)."""
        return {**super().storage_options(), "dynamodb_endpoint": self.endpoint}
