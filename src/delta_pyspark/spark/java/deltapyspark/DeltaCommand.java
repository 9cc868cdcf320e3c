package deltapyspark;

import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.catalyst.trees.TreePattern$;
import org.apache.spark.sql.execution.command.LeafRunnableCommand;
import scala.collection.immutable.Seq;

/**
 * A Delta statement in a logical plan: Spark runs it as any command (eagerly, when {@code
 * spark.sql} returns), and {@link #run} hands its text to the Python API layer ({@link
 * DeltaCommands}), which parses and executes it and answers its result rows. The columns were
 * announced at parse time, so the plan's schema is known before it runs.
 */
public final class DeltaCommand extends LogicalPlan implements LeafRunnableCommand {
  private final String sql;
  private final Seq output;

  public DeltaCommand(String sql, Seq output) {
    this.sql = sql;
    this.output = output;
  }

  public Seq run(SparkSession session) {
    Object answer = DeltaSqlParser.commands().run(session, sql);
    if (answer instanceof String) {
      throw DeltaSource.error(((String) answer).substring(1));
    }
    List rows = ((org.apache.spark.sql.Dataset) answer).collectAsList();
    Row[] array = (Row[]) rows.toArray(new Row[0]);
    return scala.collection.immutable.List$.MODULE$.from(
        scala.Predef$.MODULE$.wrapRefArray((Object[]) array));
  }

  public String sql() {
    return sql;
  }

  public Seq output() {
    return output;
  }

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

  public String simpleString(int maxFields) {
    return "DeltaCommand " + sql.trim();
  }

  public int productArity() {
    return 2;
  }

  public Object productElement(int n) {
    if (n == 0) {
      return sql;
    }
    if (n == 1) {
      return output;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }

  public boolean canEqual(Object other) {
    return other instanceof DeltaCommand;
  }
}
