package deltapyspark;

import java.util.HashMap;
import java.util.Locale;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.analysis.UnresolvedTableValuedFunction;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.collection.immutable.Seq;

/**
 * delta-spark's table functions {@code table_changes('name', start[, end])} and {@code
 * table_changes_by_path('/path', start[, end])}, rewritten by the parser into a read of the
 * table's path with the change feed options ({@code readChangeFeed}, {@code startingVersion} or
 * {@code startingTimestamp}, ...): integers are versions, strings timestamps.
 */
final class TableChanges {
  private TableChanges() {}

  static boolean isTableChanges(Object node) {
    if (!(node instanceof UnresolvedTableValuedFunction)) {
      return false;
    }
    String name = (String) ((UnresolvedTableValuedFunction) node).name().last();
    String lowered = name.toLowerCase(Locale.ROOT);
    return lowered.equals("table_changes") || lowered.equals("table_changes_by_path");
  }

  static LogicalPlan read(
      UnresolvedTableValuedFunction function, SparkSession session, ParserInterface parser) {
    String name = ((String) function.name().last()).toLowerCase(Locale.ROOT);
    Seq args = function.functionArgs();
    if (args.size() < 2 || args.size() > 3) {
      throw DeltaSource.error(
          name + " takes a table, a starting version or timestamp and an optional ending one; "
              + "got " + args.size() + " arguments");
    }
    String table = text((Expression) args.apply(0), name);
    String path = name.equals("table_changes") ? location(table, session, parser) : table;
    HashMap options = new HashMap();
    options.put("path", path);
    options.put("readChangeFeed", "true");
    bound(options, (Expression) args.apply(1), "starting", name);
    if (args.size() == 3) {
      bound(options, (Expression) args.apply(2), "ending", name);
    }
    Seq parts =
        scala.collection.immutable.List$.MODULE$.from(
            scala.Predef$.MODULE$.wrapRefArray(new Object[] {"delta", path}));
    return new UnresolvedRelation(parts, new CaseInsensitiveStringMap(options), false);
  }

  private static void bound(HashMap options, Expression arg, String prefix, String function) {
    if (!(arg instanceof Literal) || ((Literal) arg).value() == null) {
      throw DeltaSource.error(
          function + ": the " + prefix + " version or timestamp must be a literal, not "
              + arg.sql());
    }
    Literal literal = (Literal) arg;
    boolean timestamp = literal.dataType() instanceof StringType;
    options.put(prefix + (timestamp ? "Timestamp" : "Version"), literal.value().toString());
  }

  private static String text(Expression arg, String function) {
    if (!(arg instanceof Literal) || !(((Literal) arg).dataType() instanceof StringType)) {
      throw DeltaSource.error(function + ": the table must be a string literal, not " + arg.sql());
    }
    return ((Literal) arg).value().toString();
  }

  /** The location of the Delta table {@code name} (a catalog name or delta.`path`). */
  private static String location(String name, SparkSession session, ParserInterface parser) {
    Seq parts;
    try {
      parts = parser.parseMultipartIdentifier(name);
    } catch (Exception e) {
      throw DeltaSource.error("table_changes: " + name + " is not a table name: " + e);
    }
    StringBuilder encoded = new StringBuilder();
    scala.collection.Iterator it = parts.iterator();
    while (it.hasNext()) {
      encoded.append((String) it.next()).append('\0');
    }
    String answer = DeltaSqlParser.commands().timeTravel(session, encoded.toString(), "", "");
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    if (!answer.startsWith("O")) {
      throw DeltaSource.error("table_changes: " + name + " is not a Delta table");
    }
    return answer.substring(1).split("\0", -1)[0];
  }
}
