package deltapyspark;

import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * The part of {@link DeltaSqlParser} that follows {@code ParserInterface} across Spark
 * versions. Spark 4.1 binds {@code spark.sql(text, args)}'s parameters while parsing, through
 * {@code parsePlanWithParameters}, whose default would parse the text alone and drop them.
 */
abstract class VersionedParser implements ParserInterface {
  protected final ParserInterface delegate;

  VersionedParser(ParserInterface delegate) {
    this.delegate = delegate;
  }

  /** {@code sql} parsed, with {@code parameters} (a ParameterContext, or null) for Spark's. */
  abstract LogicalPlan parse(String sql, Object parameters) throws ParseException;

  public LogicalPlan parsePlanWithParameters(String sql, ParameterContext parameters)
      throws ParseException {
    return parse(sql, parameters);
  }

  /** Spark's own parse of {@code sql}. */
  LogicalPlan sparkParse(String sql, Object parameters) throws ParseException {
    return ParserParameters.sparkParse(delegate, sql, parameters);
  }

  /** {@code plan}, one of Delta's statements, with {@code parameters} for its markers. */
  LogicalPlan withParameters(LogicalPlan plan, Object parameters) {
    return ParserParameters.bound(plan, parameters);
  }
}
