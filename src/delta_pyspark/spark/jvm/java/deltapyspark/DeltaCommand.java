package deltapyspark;

import java.util.ArrayList;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NamedParameter;
import org.apache.spark.sql.catalyst.analysis.PosParameter;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StringType;
import scala.Option;
import scala.collection.immutable.Seq;

/**
 * A Delta statement in a logical plan: Spark runs it as any command (eagerly, when {@code
 * spark.sql} returns), and {@link #run} hands its text to the Python API layer ({@link
 * DeltaCommands}), which parses and executes it and answers its result rows. The columns were
 * announced at parse time, so the plan's schema is known before it runs.
 *
 * <p>The statement's parameter markers ({@code :name}, {@code ?}) are its expressions, as
 * Spark's parser makes them in its own statements: Spark's analyzer binds them to the values
 * of {@code spark.sql(text, args)} (or says which one is unbound), and {@link #run} hands the
 * bound values to Python with the text.
 */
public final class DeltaCommand extends LeafCommand {
  private final String sql;
  private final Seq output;
  private final Seq parameters;

  public DeltaCommand(String sql, Seq output, Seq parameters) {
    this.sql = sql;
    this.output = output;
    this.parameters = parameters;
  }

  /**
   * Parameter markers as Spark's expressions: each a name, or {@code ?} and the marker's
   * offset in the text (Spark numbers positional markers by their offsets).
   */
  static Seq parameters(java.util.List markers) {
    ArrayList expressions = new ArrayList();
    for (int i = 0; i < markers.size(); i++) {
      String marker = (String) markers.get(i);
      expressions.add(
          marker.startsWith("?")
              ? (Expression) new PosParameter(Integer.parseInt(marker.substring(1)))
              : (Expression) new NamedParameter(marker));
    }
    return scala.jdk.javaapi.CollectionConverters.asScala(expressions).toList();
  }

  public Seq run(SparkSession session) {
    ArrayList values = new ArrayList();
    scala.collection.Iterator bound = parameters.iterator();
    while (bound.hasNext()) {
      values.add(value((Expression) bound.next()));
    }
    return rows(DeltaSqlParser.commands().run(session, sql, SqlTokens.encode(sql), values));
  }

  /**
   * A bound marker's value as Python reads it: its kind ({@code s} a string, {@code n} a
   * number, {@code e} any other value), the length of its SQL text in characters, {@code :},
   * the SQL text, and the value as a string (as Spark casts it, in the session's time zone;
   * empty for a value not known before it runs).
   */
  private static String value(Expression value) {
    String plain = "";
    if (value.foldable()) {
      Object cast =
          new Cast(
                  value,
                  DataTypes.StringType,
                  Option.apply(SQLConf.get().sessionLocalTimeZone()))
              .eval(null);
      plain = cast == null ? "" : cast.toString();
    }
    char kind =
        value.dataType() instanceof StringType
            ? 's'
            : value.dataType() instanceof NumericType ? 'n' : 'e';
    String sql = value.sql();
    return kind + String.valueOf(sql.codePointCount(0, sql.length())) + ":" + sql + plain;
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
    return 3;
  }

  public Object productElement(int n) {
    if (n == 0) {
      return sql;
    }
    if (n == 1) {
      return output;
    }
    if (n == 2) {
      return parameters;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }
}
