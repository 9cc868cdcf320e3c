package deltapyspark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * A statement Spark parsed that the Python core runs on a Delta table: MERGE, UPDATE or
 * DELETE once resolved ({@link DeltaDml}), or a statement of {@link SparkParsedStatements}.
 * Spark runs it as any command, and {@link Call#run} hands it to the Python core, whose answer is
 * the statement's result rows (or an error).
 */
public final class DeltaDmlCommand extends LeafCommand {
  /** The Python call that runs the statement: a Dataset of its result, or an error text. */
  public interface Call {
    Object run(SparkSession session);
  }

  private final String description;
  private final String columns;
  private final Call call;
  private final Seq output;

  /** {@code columns}: the DDL of the statement's result columns (empty: none). */
  public DeltaDmlCommand(String description, String columns, Call call) {
    this.description = description;
    this.columns = columns;
    this.call = call;
    this.output =
        DataTypeUtils.toAttributes(columns.isEmpty() ? new StructType() : StructType.fromDDL(columns));
  }

  public Seq run(SparkSession session) {
    return rows(call.run(session));
  }

  public Seq output() {
    return output;
  }

  public String simpleString(int maxFields) {
    return "DeltaDmlCommand " + description;
  }

  public int productArity() {
    return 3;
  }

  public Object productElement(int n) {
    if (n == 0) {
      return description;
    }
    if (n == 1) {
      return columns;
    }
    if (n == 2) {
      return call;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }
}
