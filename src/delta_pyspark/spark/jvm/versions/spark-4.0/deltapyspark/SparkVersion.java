package deltapyspark;

import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.DescribeRelation;

/** Parsed plans whose shape differs between Spark versions, as Spark 4.0 to 4.2 make them. */
final class SparkVersion {
  private SparkVersion() {}

  /** Whether {@code describe} is of the whole table (not of a PARTITION). */
  static boolean describesTable(DescribeRelation describe) {
    return describe.partitionSpec().isEmpty();
  }

  /**
   * The condition of {@code INSERT INTO t REPLACE WHERE cond} when {@code node} is one as an
   * InsertIntoStatement, else null: Spark before 4.3 parses it as an OverwriteByExpression.
   */
  static Expression insertReplaceWhere(Object node) {
    return null;
  }
}
