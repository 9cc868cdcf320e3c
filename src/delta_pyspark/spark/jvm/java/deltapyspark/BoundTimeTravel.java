package deltapyspark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.RelationTimeTravel;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import scala.runtime.AbstractPartialFunction;

/**
 * {@code TIMESTAMP AS OF :ts} (a parameter marker in the timestamp) on a Delta table: the
 * parser leaves such time travel alone ({@link DeltaSqlParser} cannot evaluate a marker before
 * Spark binds it), and this resolution rule makes it the read {@link DeltaSqlParser#timeTravel}
 * makes of any other, once Spark's analyzer has bound the marker. Spark's own relation
 * resolution waits for the timestamp to resolve, so the rule sees it first.
 */
public final class BoundTimeTravel extends Rule {
  private final SparkSession session;

  public BoundTimeTravel(SparkSession session) {
    this.session = session;
  }

  public TreeNode apply(TreeNode plan) {
    return ((LogicalPlan) plan)
        .resolveOperatorsUp(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return node instanceof RelationTimeTravel
                    && ((RelationTimeTravel) node).timestamp().isDefined()
                    && ((org.apache.spark.sql.catalyst.expressions.Expression)
                            ((RelationTimeTravel) node).timestamp().get())
                        .resolved();
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (!isDefinedAt(node)) {
                  return fallback.apply(node);
                }
                return DeltaSqlParser.timeTravel(session, (RelationTimeTravel) node);
              }
            });
  }
}
