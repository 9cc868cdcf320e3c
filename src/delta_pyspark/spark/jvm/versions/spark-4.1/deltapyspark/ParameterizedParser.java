package deltapyspark;

import org.apache.spark.sql.catalyst.analysis.NameParameterizedQuery;
import org.apache.spark.sql.catalyst.analysis.PosParameterizedQuery;
import org.apache.spark.sql.catalyst.parser.HybridParameterContext;
import org.apache.spark.sql.catalyst.parser.NamedParameterContext;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.PositionalParameterContext;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.collection.immutable.Seq;

/**
 * The parser side of statement parameters from Spark 4.1 on: Spark binds {@code
 * spark.sql(text, args)}'s parameters while parsing, handing them over as a {@code
 * ParameterContext} through {@code parsePlanWithParameters} (whose default would parse the
 * text alone and drop them) instead of wrapping the parsed plan in a parameterized query.
 */
abstract class ParameterizedParser implements ParserInterface {
  protected final ParserInterface delegate;

  ParameterizedParser(ParserInterface delegate) {
    this.delegate = delegate;
  }

  /** {@code sql} parsed, with {@code parameters} (a ParameterContext, or null) for Spark's. */
  abstract LogicalPlan parse(String sql, Object parameters) throws ParseException;

  public LogicalPlan parsePlanWithParameters(String sql, ParameterContext parameters)
      throws ParseException {
    return parse(sql, parameters);
  }

  /** Spark's own parse of {@code sql}, its markers bound from {@code parameters} (or null). */
  LogicalPlan sparkParse(String sql, Object parameters) throws ParseException {
    return parameters == null
        ? delegate.parsePlan(sql)
        : delegate.parsePlanWithParameters(sql, (ParameterContext) parameters);
  }

  /**
   * {@code plan} (one of Delta's statements, parsed by us) inside the parameterized query
   * Spark 4.0 would have made of it, so the analyzer binds its markers as it did there.
   */
  LogicalPlan withParameters(LogicalPlan plan, Object parameters) {
    if (parameters instanceof NamedParameterContext) {
      scala.collection.immutable.Map named = ((NamedParameterContext) parameters).params();
      return named.isEmpty()
          ? plan
          : new NameParameterizedQuery(plan, named.keys().toSeq(), named.values().toSeq());
    }
    if (parameters instanceof HybridParameterContext) { // EXECUTE IMMEDIATE ... USING
      HybridParameterContext hybrid = (HybridParameterContext) parameters;
      Seq names = hybrid.paramNames();
      boolean positional = true;
      for (int i = 0; i < names.size(); i++) {
        positional = positional && ((String) names.apply(i)).isEmpty();
      }
      return positional
          ? positional(plan, hybrid.args())
          : new NameParameterizedQuery(plan, names, hybrid.args());
    }
    if (parameters != null) {
      return positional(plan, ((PositionalParameterContext) parameters).params());
    }
    return plan;
  }

  private static LogicalPlan positional(LogicalPlan plan, Seq values) {
    return values.isEmpty() ? plan : new PosParameterizedQuery(plan, values);
  }
}
