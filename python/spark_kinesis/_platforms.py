"""The platforms the KPL ships a daemon for, and the wheel each one gets.

One wheel per platform carries the KPL bundle with that platform's daemon only (tools/release.py builds them); pip
picks it by its platform tag. Each tag is what the daemon itself needs (tools/release.py checks the binary against
it): the Linux x86_64 daemon links against glibc 2.12 at most, the aarch64 one against glibc 2.25 (and libuuid, which
no tag can say); the macOS daemon is an x86_64 Mach-O for macOS 10.15 or later. On Apple silicon it runs only through
Rosetta 2, so its wheel is not tagged arm64: a native arm64 Python gets the wheel without jars below, whose
``configure()`` says so. Every other platform gets that wheel too (``py3-none-any``: the Python API without jars, which
a Spark Connect client needs, the server having the jars); ``spark_kinesis.configure()`` fails there naming the
platform. The ``--packages`` path keeps one bundle with every daemon.
"""

from __future__ import annotations

from typing import NamedTuple


class Platform(NamedTuple):
    """A platform the KPL ships a daemon for: its folder in the bundle, its wheel's tag, and its name for people."""

    folder: str  # the KPL's folder: spark-kinesis-kpl-native-binaries/<folder>/kinesis_producer
    wheel_tag: str
    shown: str


PLATFORMS = (
    Platform("linux-x86_64", "manylinux_2_12_x86_64", "Linux x86_64 (glibc 2.12 or later)"),
    Platform("linux-aarch64", "manylinux_2_25_aarch64", "Linux aarch64 (glibc 2.25 or later, with libuuid)"),
    Platform(
        "osx", "macosx_10_15_x86_64", "macOS 10.15 or later on x86_64 (Apple silicon: an x86_64 Python, Rosetta 2)"
    ),
)

#: Where the bundle keeps each platform's daemon (the JVM's DaemonCheck.ResourceRoot).
DAEMON_ROOT = "spark-kinesis-kpl-native-binaries"
