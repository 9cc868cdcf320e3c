package deltapyspark;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.RelationTimeTravel;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.runtime.AbstractPartialFunction;

/**
 * Table references the parser cannot see, made Delta reads in the hint batch that runs before
 * resolution: plans built without SQL text ({@code spark.read.table}, {@code
 * DataFrame.mergeInto}) and the statement inside {@code EXPLAIN}.
 *
 * <ul>
 *   <li>{@code delta.`path`} gets its path as the {@code path} option, as {@link
 *       DeltaSqlParser} gives it.
 *   <li>A table name read with the {@code versionAsOf}/{@code timestampAsOf} options ({@code
 *       spark.read.option("versionAsOf", 0).table("t")}) is the time travel {@link
 *       DeltaSqlParser} makes of {@code t VERSION AS OF 0}: Spark refuses time travel on its
 *       V1 tables, which Delta tables by name are here.
 * </ul>
 */
public final class DeltaTableReferences extends Rule {
  private final SparkSession session;

  public DeltaTableReferences(SparkSession session) {
    this.session = session;
  }

  public TreeNode apply(TreeNode plan) {
    return ((LogicalPlan) plan)
        .resolveOperatorsUp(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return DeltaSqlParser.isDeltaPath(node) || travelsByOptions(node);
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (DeltaSqlParser.isDeltaPath(node)) {
                  return DeltaSqlParser.withPath((UnresolvedRelation) node);
                }
                if (travelsByOptions(node)) {
                  return byOptions((UnresolvedRelation) node);
                }
                return fallback.apply(node);
              }
            });
  }

  private static boolean travelsByOptions(Object node) {
    if (!(node instanceof UnresolvedRelation)) {
      return false;
    }
    CaseInsensitiveStringMap options = ((UnresolvedRelation) node).options();
    return !options.containsKey("path")
        && (options.containsKey("versionAsOf") || options.containsKey("timestampAsOf"));
  }

  private LogicalPlan byOptions(UnresolvedRelation relation) {
    Map kept = new HashMap(relation.options().asCaseSensitiveMap());
    String version = null;
    String timestamp = null;
    for (Object key : relation.options().asCaseSensitiveMap().keySet()) {
      String name = (String) key;
      if (name.equalsIgnoreCase("versionAsOf")) {
        version = (String) kept.remove(name);
      } else if (name.equalsIgnoreCase("timestampAsOf")) {
        timestamp = (String) kept.remove(name);
      }
    }
    RelationTimeTravel travel =
        new RelationTimeTravel(
            new UnresolvedRelation(
                relation.multipartIdentifier(),
                new CaseInsensitiveStringMap(kept),
                relation.isStreaming()),
            timestamp == null
                ? Option.empty()
                : Option.apply(Literal$.MODULE$.create(timestamp, DataTypes.StringType)),
            Option.apply(version));
    LogicalPlan read = DeltaSqlParser.timeTravel(session, travel);
    return read == travel ? relation : read; // not a Delta table: Spark says what it says
  }
}
