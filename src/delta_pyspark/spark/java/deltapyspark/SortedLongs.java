package deltapyspark;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * A filter keeping the rows whose long column holds none of a sorted set of values. A MERGE
 * collects the ids of the source rows that matched while it finds its matches; the rows to
 * insert are the others. Filtering by this set costs a binary search per source row, where
 * an anti-join with the ids built, serialized and broadcast a hash table on the driver first
 * (about 0.1 s for 100,000 ids).
 */
public final class SortedLongs implements UDF1 {
  private final long[] values;

  SortedLongs(long[] values) {
    this.values = values;
  }

  /**
   * Whether column {@code column} (a non-null long) is outside {@code sorted}: ascending
   * values, eight little-endian bytes each.
   */
  public static Column notIn(String column, byte[] sorted) {
    long[] values = new long[sorted.length / 8];
    ByteBuffer.wrap(sorted).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(values);
    return functions
        .udf(new SortedLongs(values), DataTypes.BooleanType)
        .apply(
            new scala.collection.immutable.$colon$colon(
                functions.col(column), scala.collection.immutable.Nil$.MODULE$));
  }

  public Object call(Object value) throws Exception {
    return Boolean.valueOf(Arrays.binarySearch(values, ((Long) value).longValue()) < 0);
  }
}
