"""LocalStack as the tests' Kinesis (``KINESIS_TEST_BACKEND=localstack``), started through Testcontainers where a
Docker engine answers (GitHub's runners; no machine of this project's own has one).

LocalStack's Kinesis is kinesis-mock, the engine ``KinesisMock`` runs without Docker, so the same fixtures, fault
front and record-by-record assertions apply unchanged: its edge port serves both plain HTTP (boto3 reads, the fault
front's upstream) and TLS (the KPL).
"""

from __future__ import annotations

import os
from typing import Any

from .emulator import REGION, KinesisMock

#: Pinned. Since March 2026 LocalStack's newer images (after 4.14.0) exit at start without a
#: LOCALSTACK_AUTH_TOKEN; 4.14.0 is the last that runs without one. A token in the environment is passed on.
LOCALSTACK_IMAGE = "localstack/localstack:4.14.0"
EDGE_PORT = 4566


def docker_problem() -> str | None:
    """Why no Docker engine can run LocalStack here (None if one answers): what a skipped test says."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        import docker

        docker.from_env().ping()
    except ImportError:
        return "the docker Python package is not installed (requirements-dev.txt pins testcontainers, which needs it)"
    except Exception as e:  # DockerException, a refused or missing socket, a timeout
        return f"no Docker engine answers at {where} ({type(e).__name__})"
    return None


def skip_reason() -> str:
    problem = docker_problem()
    return f"KINESIS_TEST_BACKEND=localstack needs a Docker engine to run {LOCALSTACK_IMAGE}: {problem}"


class LocalStackKinesis(KinesisMock):
    """LocalStack in a container, in place of the kinesis-mock process: the same ports and client API."""

    def __init__(self, image: str = LOCALSTACK_IMAGE, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.image = image
        self._container: Any = None

    def start(self) -> LocalStackKinesis:
        from testcontainers.community.localstack import LocalStackContainer

        container = LocalStackContainer(image=self.image, region_name=REGION).with_services("kinesis")
        token = os.environ.get("LOCALSTACK_AUTH_TOKEN")
        if token:
            container = container.with_env("LOCALSTACK_AUTH_TOKEN", token)
        self._container = container.start()
        self.tls_port = self.plain_port = int(self._container.get_exposed_port(EDGE_PORT))
        for name, shards in self.streams.items():
            self.create_stream(name, shards)
        return self

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._container is not None:
            self._container.stop()
            self._container = None

    def log_tail(self, n: int = 4000) -> str:
        if self._container is None:
            return ""
        out, err = self._container.get_logs()
        return str((out + err).decode(errors="replace"))[-n:]
