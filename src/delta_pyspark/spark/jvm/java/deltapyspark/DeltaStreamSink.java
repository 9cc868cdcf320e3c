package deltapyspark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.execution.streaming.Sink;

/**
 * {@code df.writeStream.format("delta").start(path)}: each micro-batch is one transaction of
 * the Python core ({@link DeltaTables#writeStream}), which records the query's id and the
 * batch id as a {@code txn} action, so a batch replayed after a failure is skipped.
 */
public final class DeltaStreamSink implements Sink {
  /**
   * The local property naming the running query (StreamExecution.QUERY_ID_KEY, whose class
   * moved package in Spark 4.1: the key itself has not changed).
   */
  private static final String QUERY_ID_KEY = "sql.streaming.queryId";

  private final String path;
  private final String outputMode;
  private final String options;

  DeltaStreamSink(String path, String outputMode, String options) {
    this.path = path;
    this.outputMode = outputMode;
    this.options = options;
  }

  public void addBatch(long batchId, Dataset data) {
    org.apache.spark.sql.classic.Dataset rows = (org.apache.spark.sql.classic.Dataset) data;
    org.apache.spark.sql.classic.SparkSession session = rows.sparkSession();
    // the batch as a plain DataFrame: a streaming one cannot be written by a batch writer
    org.apache.spark.sql.classic.Dataset batch =
        session.internalCreateDataFrame(rows.queryExecution().toRdd(), rows.schema(), false);
    String queryId = session.sparkContext().getLocalProperty(QUERY_ID_KEY);
    String answer =
        DeltaSource.tables()
            .writeStream(session, path, batchId, queryId, outputMode, options, batch);
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
  }

  public String toString() {
    return "DeltaSink[" + path + "]";
  }
}
