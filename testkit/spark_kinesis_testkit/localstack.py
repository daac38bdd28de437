"""LocalStack as the tests' Kinesis (``KINESIS_TEST_BACKEND=localstack``), started through Testcontainers: what
``make test-localstack`` runs, here and on GitHub.

LocalStack's Kinesis is kinesis-mock, the engine ``KinesisMock`` runs without Docker, so the same fixtures, fault
front and record-by-record assertions apply unchanged: its gateway port serves both plain HTTP (boto3 reads, the fault
front's upstream) and TLS (the KPL). What differs from the embedded kinesis-mock lives here: the container, its port
(published on 127.0.0.1 only), start-up, and the limits LocalStack sets on kinesis-mock (stream latency, shard limit).

The image is ``$LOCALSTACK_TEST_IMAGE`` when set (the leg sets it, ``localstack_image.py``), else the pinned Docker
Hub one. One built here from PyPI carries the ``ORIGIN_LABEL`` label; a run on it says so (``describe()``, the junit
report's properties) and runs without Ryuk, Testcontainers' clean-up container, which no registry serves here either.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections import Counter
from typing import Any

from .emulator import REGION, KinesisMock

#: Pinned. Since March 2026 LocalStack's newer images (after 4.14.0) exit at start without a
#: LOCALSTACK_AUTH_TOKEN; 4.14.0 is the last that runs without one. A token in the environment is passed on.
LOCALSTACK_VERSION = "4.14.0"
LOCALSTACK_IMAGE = f"localstack/localstack:{LOCALSTACK_VERSION}"
EDGE_PORT = 4566
#: The label an image built here carries: where it came from, in words (``localstack_image.py`` sets it).
ORIGIN_LABEL = "io.github.spark-kinesis.localstack-origin"
#: LocalStack's settings for the tests, on whichever image. KINESIS_LATENCY=0 and the shard limit match the embedded
#: kinesis-mock's (streams ACTIVE at once; a stream per test); the rest keep LocalStack from reaching out (its
#: analytics, its certificate download, its DNS server): the tests address only loopback.
SETTINGS = {
    "KINESIS_LATENCY": "0",
    "KINESIS_SHARD_LIMIT": "2000",
    "DISABLE_EVENTS": "1",
    "SKIP_SSL_CERT_DOWNLOAD": "1",
    "DNS_ADDRESS": "0",
}


def backend_image() -> str:
    """The image the LocalStack backend runs: ``$LOCALSTACK_TEST_IMAGE`` (set by ``make test-localstack``) or the
    pinned Docker Hub one."""
    return os.environ.get("LOCALSTACK_TEST_IMAGE") or LOCALSTACK_IMAGE


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
    return f"KINESIS_TEST_BACKEND=localstack needs a Docker engine to run {backend_image()}: {problem}"


def image_origin(labels: dict[str, str] | None, image: str) -> str:
    """Where ``image`` came from, in words: an image built here says so in its label; any other is a registry's."""
    if labels and labels.get(ORIGIN_LABEL):
        return labels[ORIGIN_LABEL]
    return f"{image}, pulled from its registry (Docker Hub)"


class LocalStackKinesis(KinesisMock):
    """LocalStack in a container, in place of the kinesis-mock process: the same ports and client API."""

    def __init__(self, image: str | None = None, **kwargs: Any) -> None:
        # A container's start (LocalStack's own, then kinesis-mock's on the first Kinesis call) took ~10 s here.
        kwargs.setdefault("startup_timeout_s", 180.0)
        super().__init__(**kwargs)
        self.image = image or backend_image()
        self.version = ""  # what the running LocalStack reports (/_localstack/health)
        self.origin = ""
        self._container: Any = None

    def start(self) -> LocalStackKinesis:
        import docker
        from testcontainers.community.localstack import LocalStackContainer
        from testcontainers.core.config import testcontainers_config

        client = docker.from_env()
        try:
            labels = client.images.get(self.image).labels
        except docker.errors.ImageNotFound:
            labels = None  # a registry's image, pulled by Testcontainers below
        finally:
            client.close()
        self.origin = image_origin(labels, self.image)
        if labels and labels.get(ORIGIN_LABEL):
            # Built here because no registry answers: Ryuk's image (testcontainers/ryuk) cannot be pulled either.
            # The container is removed by stop(), and by the engine's own stop at the end of the leg.
            testcontainers_config.ryuk_disabled = True
        container = LocalStackContainer(image=self.image, region_name=REGION).with_services("kinesis")
        for key, value in SETTINGS.items():
            container = container.with_env(key, value)
        # Published on loopback only (Testcontainers' default is every interface): docker-py's (ip,) binding.
        container.ports[str(EDGE_PORT)] = ("127.0.0.1",)  # type: ignore[assignment]
        token = os.environ.get("LOCALSTACK_AUTH_TOKEN")
        if token:
            container = container.with_env("LOCALSTACK_AUTH_TOKEN", token)
        self._container = container.start(timeout=self.startup_timeout_s)
        self.tls_port = self.plain_port = int(self._container.get_exposed_port(EDGE_PORT))
        url = f"http://127.0.0.1:{self.plain_port}/_localstack/health"
        with urllib.request.urlopen(url, timeout=10) as r:
            self.version = str(json.load(r).get("version", ""))
        for name, shards in self.streams.items():
            self.create_stream(name, shards)
        return self

    def writer_options(self, endpoint: str | None = None, **kpl: Any) -> dict[str, Any]:
        """As the embedded kinesis-mock's, with more time per request and per record: LocalStack's gateway handles
        each request in Python before kinesis-mock does, and on a loaded machine (load 60 on 2 cores) a PutRecords of
        the 100,000-row batch write got no byte back within the embedded 60 s, and its records expired."""
        return super().writer_options(endpoint, **{"RequestTimeout": 180000, "RecordTtl": 600000, **kpl})

    def describe(self) -> dict[str, str]:
        """What a report says about this backend (the junit report's testsuite properties)."""
        return {
            "kinesis_backend": f"LocalStack {self.version} through Testcontainers",
            "localstack_version": self.version,
            "localstack_image": self.image,
            "localstack_image_origin": self.origin,
        }

    def requests_served(self) -> str:
        """The Kinesis operations LocalStack's gateway logged, counted (``PutRecords 812, ...``): what it served."""
        if self._container is None:
            return ""
        out, err = self._container.get_logs()
        counts = Counter(re.findall(r"AWS kinesis\.(\w+) => \d+", (out + err).decode(errors="replace")))
        return ", ".join(f"{op} {n}" for op, n in counts.most_common())

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
