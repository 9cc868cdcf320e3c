package deltapyspark;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * Filters by a sorted set of long values. A MERGE collects the ids of the source rows that
 * matched while it finds its matches: the rows to insert are the others, and the rows an
 * UPDATE SET * rewrites are among them. Filtering by the set costs a binary search per source
 * row, where a join with the ids built, serialized and broadcast a hash table on the driver
 * first (about 0.1 s for 100,000 ids).
 */
public final class SortedLongs implements UDF1 {
  private final long[] values;
  private final boolean present;

  SortedLongs(long[] values, boolean present) {
    this.values = values;
    this.present = present;
  }

  /**
   * Whether column {@code column} (a non-null long) is one of {@code sorted}: ascending
   * values, eight little-endian bytes each.
   */
  public static Column isIn(String column, byte[] sorted) {
    return test(column, sorted, true);
  }

  /** Whether column {@code column} (a non-null long) is none of {@code sorted}. */
  public static Column notIn(String column, byte[] sorted) {
    return test(column, sorted, false);
  }

  private static Column test(String column, byte[] sorted, boolean present) {
    long[] values = new long[sorted.length / 8];
    ByteBuffer.wrap(sorted).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(values);
    return functions
        .udf(new SortedLongs(values, present), DataTypes.BooleanType)
        .apply(
            new scala.collection.immutable.$colon$colon(
                functions.col(column), scala.collection.immutable.Nil$.MODULE$));
  }

  public Object call(Object value) throws Exception {
    boolean found = Arrays.binarySearch(values, ((Long) value).longValue()) >= 0;
    return Boolean.valueOf(found == present);
  }
}
