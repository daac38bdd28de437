"""The platforms the KPL ships a daemon for, and the wheel each one gets: the JVM's table (``Platforms.scala``, which
its daemon check reads too), as the build writes it into the facts resource.

One wheel per platform carries the KPL bundle with that platform's daemon only (tools/release.py builds them); pip
picks it by its platform tags, each what the daemon itself needs (tools/release_check.py checks the binary against
them). The macOS daemon is an x86_64 program, which Apple silicon runs through Rosetta 2: its wheel is tagged for
both, ``macosx_10_15_x86_64.macosx_11_0_arm64``, so a native arm64 Python gets the jars too (and the writer names
``softwareupdate --install-rosetta`` on a Mac without Rosetta 2). Every other platform gets the wheel without jars
(``py3-none-any``: the Python API, which a Spark Connect client needs, the server having the jars);
``spark_kinesis.configure()`` fails there naming the platform and the way that works. The ``--packages`` path keeps
one bundle with every daemon.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from spark_kinesis import _facts


class Platform(NamedTuple):
    """A platform the KPL ships a daemon for: its folder in the bundle, its wheel's tags, and its name for people."""

    folder: str  # the KPL's folder: <daemon_root()>/<folder>/<daemon>
    daemon: str
    wheel_tags: tuple[str, ...]
    shown: str

    @property
    def resource(self) -> str:
        """The daemon's path in the bundle: ``<daemon_root()>/<folder>/<daemon>``."""
        return f"{daemon_root()}/{self.folder}/{self.daemon}"

    @property
    def wheel_tag(self) -> str:
        """The tags as a wheel's file name carries them: a compressed tag set (``a.b``) when there are several."""
        return ".".join(self.wheel_tags)


@cache
def platforms() -> tuple[Platform, ...]:
    """The table, in its order (the facts resource's ``platforms``)."""
    table = _facts.facts()["platforms"]
    return tuple(Platform(p["folder"], p["daemon"], tuple(p["wheelTags"]), p["shown"]) for p in table)


def daemon_root() -> str:
    """Where the bundle keeps each platform's daemon (the JVM's ``Platforms.ResourceRoot``)."""
    return str(_facts.facts()["daemonRoot"])


def where_it_runs() -> str:
    """The platforms as docs and messages list them, from the table: "A; B; C"."""
    return "; ".join(p.shown for p in platforms())
