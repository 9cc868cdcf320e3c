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
 * Statement parameters from Spark 4.1 on, which hands them to the parser as a {@code
 * ParameterContext} instead of wrapping the parsed plan in a parameterized query.
 */
final class ParserParameters {
  private ParserParameters() {}

  /** Spark's own parse of {@code sql}, its markers bound from {@code parameters} (or null). */
  static LogicalPlan sparkParse(ParserInterface spark, String sql, Object parameters)
      throws ParseException {
    return parameters == null
        ? spark.parsePlan(sql)
        : spark.parsePlanWithParameters(sql, (ParameterContext) parameters);
  }

  /**
   * {@code plan} (one of Delta's statements, parsed by us) inside the parameterized query
   * Spark 4.0 would have made of it, so the analyzer binds its markers as it did there.
   */
  static LogicalPlan bound(LogicalPlan plan, Object parameters) {
    if (parameters instanceof NamedParameterContext) {
      scala.collection.immutable.Map named = ((NamedParameterContext) parameters).params();
      return named.isEmpty()
          ? plan
          : new NameParameterizedQuery(plan, named.keys().toSeq(), named.values().toSeq());
    }
    if (parameters instanceof HybridParameterContext) {
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
