package deltapyspark;

import org.apache.spark.sql.catalyst.plans.logical.InsertAction;
import org.apache.spark.sql.catalyst.plans.logical.InsertStarAction;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeAction;
import org.apache.spark.sql.catalyst.plans.logical.MergeIntoTable;
import org.apache.spark.sql.catalyst.plans.logical.UpdateAction;
import org.apache.spark.sql.catalyst.plans.logical.UpdateStarAction;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractPartialFunction;

/**
 * Keeps MERGE's {@code UPDATE SET *} and {@code INSERT *} from Spark's expansion. Spark 4.0
 * expands a star into one assignment per target column, by name from the source, as soon as
 * both tables resolve: a source column the target lacks is then dropped (schema evolution
 * would add it) and a target column the source lacks is an error (schema evolution keeps or
 * nulls it). This rule, in the hint batch that runs before resolution, turns each star into
 * an action with no assignments and records which ones were stars in a tag of the statement;
 * {@link DeltaDml} reads the tag on a Delta table, and puts the stars back on any other so
 * Spark expands them as usual.
 */
public final class MergeStars extends Rule {
  /**
   * Which actions were stars: {@code M}, {@code N}, {@code S} (matched, not matched, not
   * matched by source) and the action's index, comma-separated; empty once put back.
   */
  static final TreeNodeTag STARS = new TreeNodeTag("deltapyspark.mergeStars");

  public TreeNode apply(TreeNode plan) {
    return ((LogicalPlan) plan)
        .resolveOperatorsDown(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return node instanceof MergeIntoTable && !starList((MergeIntoTable) node).isEmpty();
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (!isDefinedAt(node)) {
                  return fallback.apply(node);
                }
                return withoutStars((MergeIntoTable) node);
              }
            });
  }

  /** The tag's value for {@code merge}: its star actions (empty: none). */
  private static String starList(MergeIntoTable merge) {
    StringBuilder found = new StringBuilder();
    stars(merge.matchedActions(), "M", found);
    stars(merge.notMatchedActions(), "N", found);
    stars(merge.notMatchedBySourceActions(), "S", found);
    return found.toString();
  }

  private static void stars(Seq actions, String kind, StringBuilder found) {
    for (int i = 0; i < actions.size(); i++) {
      Object action = actions.apply(i);
      if (action instanceof UpdateStarAction || action instanceof InsertStarAction) {
        found.append(found.length() == 0 ? "" : ",").append(kind).append(i);
      }
    }
  }

  private static MergeIntoTable withoutStars(MergeIntoTable merge) {
    String found = starList(merge);
    MergeIntoTable plain =
        withActions(
            merge,
            replaced(merge.matchedActions()),
            replaced(merge.notMatchedActions()),
            replaced(merge.notMatchedBySourceActions()));
    plain.setTagValue(STARS, found);
    return plain;
  }

  /** The statement with its stars back (on a table Spark's own expansion is for). */
  static MergeIntoTable withStars(MergeIntoTable merge) {
    String found = starsOf(merge);
    MergeIntoTable starred =
        withActions(
            merge,
            restored(merge.matchedActions(), "M", found),
            restored(merge.notMatchedActions(), "N", found),
            restored(merge.notMatchedBySourceActions(), "S", found));
    // Marked as restored (an empty list), not untagged: Spark copies the old node's tags onto
    // a rule's result that has none.
    starred.setTagValue(STARS, "");
    return starred;
  }

  /** The stars {@link #apply} took out of {@code merge} and not yet put back ("": none). */
  static String starsOf(MergeIntoTable merge) {
    Option found = merge.getTagValue(STARS);
    return found.isEmpty() ? "" : (String) found.get();
  }

  /** Whether action {@code index} of the {@code kind} list was a star. */
  static boolean wasStar(MergeIntoTable merge, String kind, int index) {
    for (String entry : starsOf(merge).split(",")) {
      if (entry.equals(kind + index)) {
        return true;
      }
    }
    return false;
  }

  private static MergeIntoTable withActions(
      MergeIntoTable merge, Seq matched, Seq notMatched, Seq notMatchedBySource) {
    return merge.copy(
        merge.targetTable(),
        merge.sourceTable(),
        merge.mergeCondition(),
        matched,
        notMatched,
        notMatchedBySource,
        merge.withSchemaEvolution());
  }

  private static Seq replaced(Seq actions) {
    Object[] out = new Object[actions.size()];
    for (int i = 0; i < out.length; i++) {
      Object action = actions.apply(i);
      if (action instanceof UpdateStarAction) {
        out[i] = Products.create(
                UpdateAction.class,
                new Object[] {((UpdateStarAction) action).condition(), nil()});
      } else if (action instanceof InsertStarAction) {
        out[i] = new InsertAction(((InsertStarAction) action).condition(), nil());
      } else {
        out[i] = action;
      }
    }
    return seq(out);
  }

  private static Seq restored(Seq actions, String kind, String found) {
    java.util.Set starred = new java.util.HashSet(java.util.Arrays.asList(found.split(",")));
    Object[] out = new Object[actions.size()];
    for (int i = 0; i < out.length; i++) {
      MergeAction action = (MergeAction) actions.apply(i);
      if (!starred.contains(kind + i)) {
        out[i] = action;
      } else if (action instanceof UpdateAction) {
        out[i] = new UpdateStarAction(action.condition());
      } else {
        out[i] = new InsertStarAction(action.condition());
      }
    }
    return seq(out);
  }

  private static Seq nil() {
    return scala.collection.immutable.Nil$.MODULE$;
  }

  static Seq seq(Object[] items) {
    return scala.collection.immutable.List$.MODULE$.from(
        scala.Predef$.MODULE$.wrapRefArray(items));
  }
}
