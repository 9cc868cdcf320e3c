package deltapyspark;

/**
 * An offset of a streaming read of a Delta table: JSON the Python core writes and reads
 * ({@code core/changes/stream_source.py}); Spark keeps it in the query's checkpoint.
 */
public final class DeltaStreamOffset extends org.apache.spark.sql.execution.streaming.Offset {
  private final String json;

  public DeltaStreamOffset(String json) {
    this.json = json;
  }

  public String json() {
    return json;
  }
}
