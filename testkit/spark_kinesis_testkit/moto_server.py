"""moto's server on loopback (PyPI ``moto[server]``): a real STS (assume-role and web identity end to end), S3 (a
checkpoint and an input on ``s3a://``, skip on replay's fingerprints) and DynamoDB (a KCL worker's lease table).

moto issues a fresh temporary key for every AssumeRole / AssumeRoleWithWebIdentity and remembers whose it is:
``caller_arn(key_id)`` asks it (GetCallerIdentity, which moto answers from the key id alone), so a test can tell an
assumed role's key from a base key by what STS says, not by its shape. With ``refuse_unknown_keys`` moto checks
signatures against its IAM users (it has none), so every signed call is refused with ``InvalidClientTokenId``, as
STS refuses keys it does not know.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from spark_kinesis_testkit.emulator import (
    FAKE_ACCESS_KEY_ID,
    FAKE_SECRET_ACCESS_KEY,
    REGION,
    free_port,
    stop_process,
    wait_http_ready,
)

#: What S3A needs on a Spark 4 class path beside Hadoop 3.5.0 (as `make platform-jars` fetches them into
#: .cache/platform-jars): hadoop-aws, its analytics accelerator, and the AWS SDK bundle it pins.
S3A_JARS = ("hadoop-aws-3.5.0.jar", "analyticsaccelerator-s3-1.3.1.jar", "bundle-2.35.4.jar")


def s3a_jars() -> list[str]:
    """The S3A_JARS as `make platform-jars` fetched them (the class path an EMR cluster has); FileNotFoundError naming
    that target when one is missing."""
    where = Path(__file__).resolve().parents[2] / ".cache" / "platform-jars"
    absent = [j for j in S3A_JARS if not (where / j).exists()]
    if absent:
        raise FileNotFoundError(f"{absent} missing in {where}: run `make platform-jars`")
    return [str(where / j) for j in S3A_JARS]


class MotoServer:
    """One moto server: STS, S3 and DynamoDB on one loopback port."""

    def __init__(self, refuse_unknown_keys: bool = False, startup_timeout_s: float = 30.0) -> None:
        self.refuse_unknown_keys = refuse_unknown_keys
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = Path(tempfile.mkstemp(prefix="moto-server-", suffix=".log")[1])

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoServer:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        if self.refuse_unknown_keys:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "0"
        server = Path(sys.executable).with_name("moto_server")
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(
                [str(server), "-H", "127.0.0.1", "-p", str(self.port)], stdout=log, stderr=subprocess.STDOUT, env=env
            )
        try:
            wait_http_ready(self._proc, f"{self.endpoint}/moto-api/", self.startup_timeout_s, "moto_server", self._tail)
        except TimeoutError:
            self.stop()
            raise
        return self

    def _tail(self) -> str:
        return self._log.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def client(self, key_id: str = "AKIASTSCLIENT0000000", secret: str = "sts-client-secret") -> Any:
        return self._boto("sts", key_id, secret)

    def s3(self) -> Any:
        """A boto3 S3 client of this server (moto serves S3 too), with the emulator's fake keys."""
        return self._boto("s3", FAKE_ACCESS_KEY_ID, FAKE_SECRET_ACCESS_KEY)

    def _boto(self, service: str, key_id: str, secret: str) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=key_id,
            aws_secret_access_key=secret,
        )

    def s3a_settings(self) -> dict[str, str]:
        """Hadoop settings that point S3A (``s3a://``) at this server's S3, path-style, plain HTTP, the fake keys."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": REGION,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "fs.s3a.access.key": FAKE_ACCESS_KEY_ID,
            "fs.s3a.secret.key": FAKE_SECRET_ACCESS_KEY,
        }

    def caller_arn(self, key_id: str) -> str:
        """Who STS says ``key_id`` belongs to (a role's: ``arn:aws:sts::<account>:assumed-role/<role>/<session>``)."""
        return str(self.client(key_id).get_caller_identity()["Arn"])
