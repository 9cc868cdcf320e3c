package deltapyspark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NameParameterizedQuery;
import org.apache.spark.sql.catalyst.analysis.NamedParameter;
import org.apache.spark.sql.catalyst.analysis.PosParameter;
import org.apache.spark.sql.catalyst.analysis.PosParameterizedQuery;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.UnresolvedWith;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code [CREATE OR] REPLACE TABLE ... USING delta [AS query]}, which Spark plans for V2
 * catalogs only, and the {@code CREATE TABLE}s Spark's own command cannot make ({@link
 * TableDefinitions#isDeltaCreate}): the statement runs as the Python layer's {@link
 * DeltaCommands#define}, one transaction writing the definition and data (a replacement over
 * the table's log, keeping its history). {@code query} (null without AS) is analysed when it
 * runs.
 *
 * <p>The query is no child of the command (Spark would plan it as a part of this plan), so the
 * parameter markers it holds ({@code :name}, {@code ?}) are also the command's expressions:
 * Spark's analyzer binds those (or says which is unbound), and {@link #run} hands the bound
 * values to Spark with the query.
 */
public final class DefineDeltaTable extends LeafCommand {
  private final Map definition;
  private final LogicalPlan query;
  /** The query's markers, each once: a name, or {@code ?} and its position. */
  private final List markers;
  /** The same markers as expressions, bound by Spark's analyzer in the same order. */
  private final Seq parameters;

  public DefineDeltaTable(Map definition, LogicalPlan query) {
    this(definition, query, markersOf(query));
  }

  private DefineDeltaTable(Map definition, LogicalPlan query, List markers) {
    this(definition, query, markers, DeltaCommand.parameters(markers));
  }

  /** Spark's copy of the node, with its parameters bound. */
  public DefineDeltaTable(Map definition, LogicalPlan query, List markers, Seq parameters) {
    this.definition = definition;
    this.query = query;
    this.markers = markers;
    this.parameters = parameters;
  }

  public Seq run(SparkSession session) {
    Object data = null;
    if (query != null) {
      data =
          org.apache.spark.sql.classic.Dataset$.MODULE$.ofRows(
              (org.apache.spark.sql.classic.SparkSession) session, bound());
    }
    String answer = DeltaSqlParser.commands().define(session, definition, data);
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    return scala.collection.immutable.Nil$.MODULE$;
  }

  /**
   * The query with the values Spark bound to its markers, as Spark's own parameterized query
   * (so Spark binds them wherever they are: CTEs, subqueries).
   */
  private LogicalPlan bound() {
    if (markers.isEmpty()) {
      return query;
    }
    if (!((String) markers.get(0)).startsWith("?")) {
      return new NameParameterizedQuery(query, MergeStars.seq(markers.toArray()), parameters);
    }
    // Spark gives positional values in the order of the markers' positions
    Integer[] order = new Integer[markers.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = Integer.valueOf(i);
    }
    java.util.Arrays.sort(
        order,
        new java.util.Comparator() {
          public int compare(Object a, Object b) {
            return Integer.compare(position((Integer) a), position((Integer) b));
          }
        });
    Object[] values = new Object[order.length];
    for (int i = 0; i < order.length; i++) {
      values[i] = parameters.apply(order[i].intValue());
    }
    return new PosParameterizedQuery(query, MergeStars.seq(values));
  }

  private int position(Integer marker) {
    return Integer.parseInt(((String) markers.get(marker.intValue())).substring(1));
  }

  /** {@code query}'s markers (its subqueries' too), each once, in the order first met. */
  private static List markersOf(LogicalPlan query) {
    final List found = new ArrayList();
    if (query == null) {
      return found;
    }
    collect(query, found);
    return found;
  }

  private static void collect(LogicalPlan plan, final List found) {
    plan.foreachWithSubqueries(
        new AbstractFunction1() {
          public Object apply(Object node) {
            if (node instanceof UnresolvedWith) { // its CTEs' plans are no children
              scala.collection.Iterator ctes = ((UnresolvedWith) node).cteRelations().iterator();
              while (ctes.hasNext()) {
                // (name, plan), or (name, plan, ...) from Spark 4.3 on
                collect((LogicalPlan) ((scala.Product) ctes.next()).productElement(1), found);
              }
            }
            scala.collection.Iterator expressions = ((LogicalPlan) node).expressions().iterator();
            while (expressions.hasNext()) {
              ((Expression) expressions.next())
                  .foreach(
                      new AbstractFunction1() {
                        public Object apply(Object expression) {
                          String key = key(expression);
                          if (key != null && !found.contains(key)) {
                            found.add(key);
                          }
                          return BoxedUnit.UNIT;
                        }
                      });
            }
            return BoxedUnit.UNIT;
          }
        });
  }

  private static String key(Object expression) {
    if (expression instanceof NamedParameter) {
      return ((NamedParameter) expression).name();
    }
    if (expression instanceof PosParameter) {
      return "?" + ((PosParameter) expression).pos();
    }
    return null;
  }

  public Seq output() {
    return scala.collection.immutable.Nil$.MODULE$;
  }

  public String simpleString(int maxFields) {
    return "DefineDeltaTable " + java.util.Arrays.toString((String[]) definition.get("name"));
  }

  public int productArity() {
    return 4;
  }

  public Object productElement(int n) {
    if (n == 0) {
      return definition;
    }
    if (n == 1) {
      return query;
    }
    if (n == 2) {
      return markers;
    }
    if (n == 3) {
      return parameters;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }
}
