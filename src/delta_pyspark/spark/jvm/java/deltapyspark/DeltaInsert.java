package deltapyspark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.collection.immutable.Seq;

/**
 * A SQL insert into a Delta table ({@code INSERT INTO|OVERWRITE}, {@code insertInto}): what
 * Spark would have run as a plain Parquet write into the table's directory, run instead as the
 * Python core's write command and transaction ({@link DeltaTables#write}). {@code query} is
 * already analysed and in the table's column order; it is executed when the command runs.
 */
public final class DeltaInsert extends LeafCommand {
  private final String path;
  private final String mode;
  private final String options;
  private final LogicalPlan query;

  /** {@code options}: {@code key NUL value NUL ...}, as {@link DeltaTables#write} takes them. */
  public DeltaInsert(String path, String mode, String options, LogicalPlan query) {
    this.path = path;
    this.mode = mode;
    this.options = options;
    this.query = query;
  }

  public Seq run(SparkSession session) {
    org.apache.spark.sql.classic.Dataset data =
        org.apache.spark.sql.classic.Dataset$.MODULE$.ofRows(
            (org.apache.spark.sql.classic.SparkSession) session, query);
    String answer = DeltaSource.tables().write(session, path, mode, options, data);
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    return scala.collection.immutable.Nil$.MODULE$;
  }

  public Seq output() {
    return scala.collection.immutable.Nil$.MODULE$;
  }

  public String simpleString(int maxFields) {
    return "DeltaInsert " + mode + " " + path;
  }

  public int productArity() {
    return 4;
  }

  public Object productElement(int n) {
    switch (n) {
      case 0:
        return path;
      case 1:
        return mode;
      case 2:
        return options;
      case 3:
        return query;
      default:
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }
}
