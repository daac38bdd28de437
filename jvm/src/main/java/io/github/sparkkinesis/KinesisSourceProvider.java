package io.github.sparkkinesis;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The {@code kinesis} data source: a DataSource V2 sink for streaming and batch writes, on the same task core as
 * {@code foreach} (the table and the writes are {@link KinesisSink}'s).
 *
 * <pre>
 * df.writeStream.format("kinesis").option("stream_name", "events").option("region", "eu-west-1").start()
 * df.write.format("kinesis").option("stream_name", "events").option("region", "eu-west-1").mode("append").save()
 * </pre>
 *
 * <p>Java on purpose: Spark instantiates every registered data source to ask its {@link #shortName()}, whatever the
 * query reads or writes. This class touches nothing Scala until it is used, so a jar built for another Scala version
 * breaks no other data source, and using it gets {@link SparkLineCheck}'s message, not a linkage error. Where another
 * connector also answers to {@code kinesis}, name this class: {@code format("io.github.sparkkinesis.KinesisSourceProvider")}.
 */
public final class KinesisSourceProvider implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "kinesis";
  }

  /** A sink has no schema of its own: it takes the DataFrame's and checks it when the write is planned. */
  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    SparkLineCheck.require();
    return new StructType();
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    SparkLineCheck.require();
    return KinesisSink.table(properties);
  }
}
