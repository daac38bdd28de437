"""Write PySpark Structured Streaming to Amazon Kinesis through the KPL, with a bounded queue.

``import spark_kinesis`` lets ``df.writeStream.foreach(KinesisWriter(...))`` attach the JVM writer.
``python -m spark_kinesis`` prints the ``--packages`` coordinates of each Spark line.
"""

from spark_kinesis._jar import configure, coordinates, installed_spark, jar_path, jar_paths
from spark_kinesis._version import __version__
from spark_kinesis.writer import KinesisWriter, install

install()

__all__ = ["KinesisWriter", "__version__", "configure", "coordinates", "installed_spark", "jar_path", "jar_paths"]
