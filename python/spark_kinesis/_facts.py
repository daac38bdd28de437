"""The facts resource the build writes from the JVM's tables: the writer options, the task totals, the Spark lines.

The build generates ``spark-kinesis.json`` from the Scala option table (``KinesisWriterOptions``), the task totals
(``TaskTotals``) and the Spark lines (``project/SparkLines.scala``), puts it in every line jar and beside the jars in
this package (``make jar``; the wheel carries it). Python reads its options, totals and lines from it, never a copy.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

PATH = Path(__file__).parent / "jars" / "spark-kinesis.json"


class Option(NamedTuple):
    """One writer option, as the JVM's table has it."""

    name: str
    type: type[Any]  # str, int or bool
    default: Any  # typed; None: no default value
    allowed: dict[str, Any] | None  # {"expected": wording, and "min", "oneOf" or "nonBlank"}
    secret: bool
    doc: str

    def problem(self, value: Any) -> str | None:
        """The JVM's wording of what is wrong with a value of the right type, or None."""
        rule = self.allowed
        if rule is None:
            return None
        ok = (
            ("min" not in rule or value >= rule["min"])
            and ("oneOf" not in rule or value.lower() in rule["oneOf"])
            and (not rule.get("nonBlank") or bool(value.strip()))
        )
        return None if ok else f"Option {self.name}='{value}' is invalid: expected {rule['expected']}."


_TYPES: dict[str, type[Any]] = {"string": str, "int": int, "long": int, "boolean": bool}


@cache
def facts() -> dict[str, Any]:
    """The whole resource; FileNotFoundError naming the fix where the build has not written it."""
    try:
        return dict(json.loads(PATH.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"spark_kinesis has no bundled {PATH.name} (a source checkout before `make jar`?): "
            "build it with `make jar`."
        ) from None


@cache
def options() -> dict[str, Option]:
    """The writer options in keyword order."""
    return {
        o["name"]: Option(o["name"], _TYPES[o["type"]], o["default"], o["allowed"], o["secret"], o["doc"])
        for o in facts()["options"]
    }


def kpl_secrets() -> frozenset[str]:
    """KPL settings whose values are secrets."""
    return frozenset(facts()["kplSecrets"])


def totals() -> list[dict[str, str]]:
    """The task totals (``writer.metrics()``'s keys): name, unit, description."""
    return list(facts()["totals"])


def lines() -> dict[str, tuple[str, ...]]:
    """Spark line -> the Scala binary versions it is built for; the first is the one pip's pyspark runs."""
    return {ln["line"]: tuple(ln["scala"]) for ln in facts()["lines"]}


def group() -> str:
    return str(facts()["group"])
