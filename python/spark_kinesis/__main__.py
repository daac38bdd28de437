"""``python -m spark_kinesis``: the artifact of each Spark line, and the jars for the installed pyspark."""

from __future__ import annotations

from spark_kinesis._jar import LINES, coordinates, installed_spark, jar_paths
from spark_kinesis._version import __version__


def main() -> None:
    print(f"spark-kinesis {__version__}: --packages coordinates (each brings the KPL bundle along)")
    for line, scalas in LINES.items():
        for scala in scalas:
            name = "4.x" if line == "4" else line
            print(f"  Spark {name:<4} Scala {scala}  {coordinates(line + '.0', scala)}")
    try:
        spark, spark_scala = installed_spark()
    except ImportError:
        print("pyspark is not installed here.")
        return
    print(f"Installed pyspark runs Spark {spark} (Scala {spark_scala or 'unknown'}); its jars (--jars):")
    try:
        print("  " + ",".join(jar_paths()))
    except (FileNotFoundError, RuntimeError) as e:
        print(f"  {e}")


if __name__ == "__main__":
    main()
