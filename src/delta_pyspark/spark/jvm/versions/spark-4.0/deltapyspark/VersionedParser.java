package deltapyspark;

import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * The part of {@link DeltaSqlParser} that follows {@code ParserInterface} across Spark
 * versions. Spark 4.0 binds a statement's parameters after parsing, so only the text is
 * parsed here.
 */
abstract class VersionedParser implements ParserInterface {
  protected final ParserInterface delegate;

  VersionedParser(ParserInterface delegate) {
    this.delegate = delegate;
  }

  /** {@code sql} parsed, with {@code parameters} (null here) for Spark's parser. */
  abstract LogicalPlan parse(String sql, Object parameters) throws ParseException;

  /** Spark's own parse of {@code sql}. */
  LogicalPlan sparkParse(String sql, Object parameters) throws ParseException {
    return delegate.parsePlan(sql);
  }

  /** {@code plan}, one of Delta's statements: Spark wraps it in its parameters itself. */
  LogicalPlan withParameters(LogicalPlan plan, Object parameters) {
    return plan;
  }
}
