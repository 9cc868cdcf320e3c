package deltapyspark;

import org.apache.spark.sql.SparkSession;
import scala.collection.immutable.Seq;

/**
 * A Delta statement in a logical plan: Spark runs it as any command (eagerly, when {@code
 * spark.sql} returns), and {@link #run} hands its text to the Python API layer ({@link
 * DeltaCommands}), which parses and executes it and answers its result rows. The columns were
 * announced at parse time, so the plan's schema is known before it runs.
 */
public final class DeltaCommand extends LeafCommand {
  private final String sql;
  private final Seq output;

  public DeltaCommand(String sql, Seq output) {
    this.sql = sql;
    this.output = output;
  }

  public Seq run(SparkSession session) {
    return rows(DeltaSqlParser.commands().run(session, sql));
  }

  public String sql() {
    return sql;
  }

  public Seq output() {
    return output;
  }

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
}
