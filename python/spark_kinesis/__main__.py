"""``python -m spark_kinesis``: the artifact of each Spark line, and the jars for the installed pyspark."""

from __future__ import annotations

from spark_kinesis._facts import lines
from spark_kinesis._jar import coordinates, installed_spark, jar_paths, shown_line
from spark_kinesis._version import __version__


def main() -> None:
    print(f"spark-kinesis {__version__}: --packages coordinates (each brings the KPL bundle along)")
    for line, scalas in lines().items():
        for scala in scalas:
            print(f"  Spark {shown_line(line):<4} Scala {scala}  {coordinates(line, scala)}")
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
