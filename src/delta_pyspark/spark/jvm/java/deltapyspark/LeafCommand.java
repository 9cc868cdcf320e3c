package deltapyspark;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.catalyst.trees.TreePattern$;
import org.apache.spark.sql.execution.command.LeafRunnableCommand;
import scala.collection.immutable.Seq;

/**
 * A command node without children that Spark runs eagerly ({@link DeltaCommand}, {@link
 * DeltaInsert}): what Scala's case classes and trait mix-ins would generate, spelt out for
 * Janino. Subclasses give {@code run}, {@code output}, {@code simpleString} and the product's
 * elements.
 */
public abstract class LeafCommand extends LogicalPlan implements LeafRunnableCommand {
  public Seq children() {
    return scala.collection.immutable.Nil$.MODULE$;
  }

  public Statistics stats() {
    return org.apache.spark.sql.catalyst.plans.logical.Statistics$.MODULE$.DUMMY();
  }

  public org.apache.spark.sql.catalyst.expressions.AttributeSet producedAttributes() {
    return outputSet();
  }

  public scala.collection.immutable.Map metrics() {
    return scala.collection.immutable.Map$.MODULE$.empty();
  }

  public org.apache.spark.sql.catalyst.trees.TreeNode mapChildren(scala.Function1 f) {
    return this;
  }

  public org.apache.spark.sql.catalyst.trees.TreeNode withNewChildrenInternal(
      scala.collection.immutable.IndexedSeq children) {
    return this;
  }

  public Seq nodePatterns() {
    return scala.collection.immutable.List$.MODULE$.from(
        scala.Predef$.MODULE$.wrapRefArray(new Object[] {TreePattern$.MODULE$.COMMAND()}));
  }

  public void org$apache$spark$sql$catalyst$plans$logical$Command$_setter_$nodePatterns_$eq(
      Seq patterns) {}

  /** A Python command's answer as the command's rows: a Dataset's, or its error thrown. */
  static Seq rows(Object answer) {
    if (answer instanceof String) {
      throw DeltaSource.error(((String) answer).substring(1));
    }
    java.util.List rows = ((org.apache.spark.sql.Dataset) answer).collectAsList();
    return scala.collection.immutable.List$.MODULE$.from(
        scala.Predef$.MODULE$.wrapRefArray(
            (Object[]) rows.toArray(new org.apache.spark.sql.Row[0])));
  }

  public boolean canEqual(Object other) {
    return other != null && other.getClass() == getClass();
  }
}
