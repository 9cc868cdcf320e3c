package deltapyspark;

import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.DescribeRelation;
import org.apache.spark.sql.catalyst.plans.logical.InsertIntoStatement;
import org.apache.spark.sql.catalyst.plans.logical.InsertReplaceWhere;

/** Parsed plans whose shape differs between Spark versions, as Spark 4.3 makes them. */
final class SparkVersion {
  private SparkVersion() {}

  /**
   * Whether {@code describe} is of the whole table: always, since Spark 4.3 parses {@code
   * DESCRIBE t PARTITION (...)} as a plan of its own.
   */
  static boolean describesTable(DescribeRelation describe) {
    return true;
  }

  /**
   * The condition of {@code INSERT INTO t REPLACE WHERE cond} when {@code node} is one, else
   * null: Spark 4.3 parses it as an InsertIntoStatement with replace criteria.
   */
  static Expression insertReplaceWhere(Object node) {
    if (!(node instanceof InsertIntoStatement)) {
      return null;
    }
    scala.Option criteria = ((InsertIntoStatement) node).replaceCriteriaOpt();
    return criteria.isDefined() && criteria.get() instanceof InsertReplaceWhere
        ? ((InsertReplaceWhere) criteria.get()).cond()
        : null;
  }
}
