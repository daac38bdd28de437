"""Write PySpark Structured Streaming to Amazon Kinesis through the KPL, with a bounded queue.

``import spark_kinesis`` lets ``df.writeStream.foreach(KinesisWriter(...))`` attach the JVM writer.
"""

from spark_kinesis._jar import configure, jar_path
from spark_kinesis._version import __version__
from spark_kinesis.writer import KinesisWriter, install

install()

__all__ = ["KinesisWriter", "__version__", "configure", "install", "jar_path"]
