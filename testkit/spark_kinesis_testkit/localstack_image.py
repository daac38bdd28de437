"""The LocalStack image of ``make test-localstack``: the pinned Docker Hub image where it can be pulled (GitHub), else
one built here from PyPI, for a machine whose only registries are the package ones.

The build: ``debootstrap`` a minimal Debian (``DEBIAN_SUITE``: LocalStack's Kinesis provider needs Python >= 3.12,
which bookworm lacks) from the apt mirror, ``docker import`` it, and build ``testkit/localstack-image/Dockerfile`` on it
(localstack-core and every dependency pinned in ``requirements.txt`` beside it; kinesis-mock as ``make emulator``
installed it from npm, at the version of ``tools/emulator/package-lock.json``). Each image is tagged under the
project's name with a hash of what it is made of, so an engine that has it already (``.cache/docker``, kept between
runs) skips the work; it is never tagged ``localstack/localstack``, which it is not.

``python -m spark_kinesis_testkit.localstack_image`` prints the image to use on its last line (progress on stderr).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .emulator import find_kinesis_mock
from .localstack import LOCALSTACK_IMAGE, LOCALSTACK_VERSION, ORIGIN_LABEL

ROOT = Path(__file__).resolve().parents[2]
IMAGE_DIR = ROOT / "testkit" / "localstack-image"
PACKAGE_LOCK = ROOT / "tools" / "emulator" / "package-lock.json"
CACHE = ROOT / ".cache" / "localstack-image"
LOCAL_REPO = "spark-kinesis/localstack"
BASE_REPO = "spark-kinesis/debian-base"
#: Debian 13: Python 3.13 and Node.js 20 from the archive itself. The suite is the pin deb.debian.org can keep (it
#: serves no snapshots); the Dockerfile's requirements.txt pins everything LocalStack runs on top.
DEBIAN_SUITE = "trixie"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_PACKAGES = ("python3", "python3-venv", "nodejs", "ca-certificates")


def say(msg: str) -> None:
    print(f"localstack-image: {msg}", file=sys.stderr, flush=True)


def kinesis_mock_pin() -> tuple[str, str]:
    """kinesis-local's version and integrity hash, from the lock file ``make emulator`` installs from."""
    entry = json.loads(PACKAGE_LOCK.read_text())["packages"]["node_modules/kinesis-local"]
    return str(entry["version"]), str(entry["integrity"])


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:12]


def base_tag() -> str:
    return f"{BASE_REPO}:{DEBIAN_SUITE}-{_digest(DEBIAN_SUITE, DEBIAN_MIRROR, *DEBIAN_PACKAGES)}"


def local_tag() -> str:
    """What the image built here is made of, hashed: base, Dockerfile, every pinned package, kinesis-mock."""
    files = [(IMAGE_DIR / n).read_bytes() for n in ("Dockerfile", "requirements.txt")]
    return f"{LOCAL_REPO}:{LOCALSTACK_VERSION}-{_digest(base_tag(), *files, *kinesis_mock_pin())}"


def origin_words(version: str) -> str:
    return (
        f"LocalStack {LOCALSTACK_VERSION} built here from PyPI (localstack-core=={LOCALSTACK_VERSION}, "
        f"kinesis-local {version} from npm, Debian {DEBIAN_SUITE}): not the Docker Hub image {LOCALSTACK_IMAGE}"
    )


def _has(client: Any, ref: str) -> bool:
    import docker

    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def _pull_official(client: Any) -> bool:
    import docker

    if _has(client, LOCALSTACK_IMAGE):
        return True
    repo, tag = LOCALSTACK_IMAGE.rsplit(":", 1)
    try:
        client.images.pull(repo, tag=tag)
    except docker.errors.APIError as e:  # no registry answers: the engine says so at once
        say(f"cannot pull {LOCALSTACK_IMAGE}: {e.explanation or e}")
        return False
    return True


def _build_base(client: Any, tag: str) -> None:
    """debootstrap a minimal Debian and import it as ``tag``."""
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise RuntimeError("debootstrap is not installed (apt-get install debootstrap): needed to build the base image")
    if os.geteuid() != 0:
        raise RuntimeError("debootstrap needs root to build the base image")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rootfs-", dir=CACHE) as tmp:
        rootfs = Path(tmp) / "rootfs"
        t0 = time.monotonic()
        say(f"debootstrap {DEBIAN_SUITE} ({', '.join(DEBIAN_PACKAGES)}) from {DEBIAN_MIRROR}")
        subprocess.run(
            [
                debootstrap,
                "--variant=minbase",
                f"--include={','.join(DEBIAN_PACKAGES)}",
                DEBIAN_SUITE,
                str(rootfs),
                DEBIAN_MIRROR,
            ],
            check=True,
            stdout=sys.stderr,
        )
        shutil.rmtree(rootfs / "var" / "cache" / "apt" / "archives", ignore_errors=True)
        tarball = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        repo, name = tag.rsplit(":", 1)
        client.api.import_image_from_file(str(tarball), repository=repo, tag=name)
        say(f"{tag} imported, {time.monotonic() - t0:.0f} s")


def _ca_bundle() -> Path:
    """The host's CA bundle, which pip in the build needs to reach PyPI from this machine."""
    default = "/etc/ssl/certs/ca-certificates.crt"
    for candidate in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"), default):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise RuntimeError("no CA bundle found for pip in the image build (PIP_CERT, SSL_CERT_FILE)")


def _build_local(client: Any, tag: str) -> None:
    base = base_tag()
    if not _has(client, base):
        _build_base(client, base)
    version, _ = kinesis_mock_pin()
    kinesis_local = find_kinesis_mock().parent
    if json.loads((kinesis_local / "package.json").read_text())["version"] != version:
        raise RuntimeError(f"{kinesis_local} is not kinesis-local {version}: run `make emulator`")
    CACHE.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="context-", dir=CACHE) as ctx:
        for name in ("Dockerfile", "requirements.txt"):
            shutil.copy(IMAGE_DIR / name, Path(ctx) / name)
        shutil.copy(_ca_bundle(), Path(ctx) / "ca-certificates.crt")
        shutil.copytree(kinesis_local, Path(ctx) / "kinesis-local")
        say(f"building {tag} on {base}")
        error = None
        for chunk in client.api.build(
            path=ctx,
            tag=tag,
            buildargs={"BASE": base, "KINESIS_MOCK_VERSION": version},
            labels={ORIGIN_LABEL: origin_words(version)},
            network_mode="host",  # pip reaches PyPI as the host does; no NAT needed
            rm=True,
            forcerm=True,
            decode=True,
        ):
            if "stream" in chunk:
                sys.stderr.write(chunk["stream"])
            if "error" in chunk:
                error = chunk["error"]
        if error is not None:
            raise RuntimeError(f"building {tag} failed: {error}")
    say(f"{tag} built, {time.monotonic() - t0:.0f} s")


def ensure_image(client: Any) -> str:
    """The pinned Docker Hub image if the engine has it or can pull it, else the one built here (built if absent)."""
    if _pull_official(client):
        say(f"using {LOCALSTACK_IMAGE} (Docker Hub)")
        return LOCALSTACK_IMAGE
    tag = local_tag()
    if _has(client, tag):
        say(f"using {tag}, cached: {origin_words(kinesis_mock_pin()[0])}")
    else:
        _build_local(client, tag)
        say(f"using {tag}: {origin_words(kinesis_mock_pin()[0])}")
    return tag


def main() -> int:
    import docker

    client = docker.from_env(timeout=600)
    try:
        print(ensure_image(client))
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
