package deltapyspark;

import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.collection.immutable.Seq;

/**
 * {@code [CREATE OR] REPLACE TABLE ... USING delta [AS query]}: Spark plans a replacement for V2
 * catalogs only, so the statement runs as the Python layer's replace ({@link
 * DeltaCommands#replace}): one transaction that writes the new definition and data over the
 * table's log, keeping its history. {@code query} (null without AS) is analysed when it runs.
 */
public final class DeltaReplace extends LeafCommand {
  private final Map definition;
  private final LogicalPlan query;

  public DeltaReplace(Map definition, LogicalPlan query) {
    this.definition = definition;
    this.query = query;
  }

  public Seq run(SparkSession session) {
    Object data = null;
    if (query != null) {
      data =
          org.apache.spark.sql.classic.Dataset$.MODULE$.ofRows(
              (org.apache.spark.sql.classic.SparkSession) session, query);
    }
    String answer = DeltaSqlParser.commands().replace(session, definition, data);
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    return scala.collection.immutable.Nil$.MODULE$;
  }

  public Seq output() {
    return scala.collection.immutable.Nil$.MODULE$;
  }

  public String simpleString(int maxFields) {
    return "DeltaReplace " + java.util.Arrays.toString((String[]) definition.get("name"));
  }

  public int productArity() {
    return 2;
  }

  public Object productElement(int n) {
    if (n == 0) {
      return definition;
    }
    if (n == 1) {
      return query;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }
}
