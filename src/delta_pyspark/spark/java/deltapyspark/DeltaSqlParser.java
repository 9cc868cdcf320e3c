package deltapyspark;

import java.util.HashMap;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.InsertIntoStatement;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractPartialFunction;

/**
 * Spark's SQL parser, with {@code delta.`path`} table references (read, or written by an
 * INSERT) given their path as the {@code path} option. Spark resolves such a reference through the source's {@code
 * createRelation}, which only receives the options (the path goes to it separately), so the
 * source would not know which table to read.
 */
public final class DeltaSqlParser implements ParserInterface {
  private final ParserInterface delegate;

  public DeltaSqlParser(ParserInterface delegate) {
    this.delegate = delegate;
  }

  public LogicalPlan parsePlan(String sql) throws ParseException {
    return withPaths(delegate.parsePlan(sql));
  }

  public LogicalPlan parseQuery(String sql) throws ParseException {
    return withPaths(delegate.parseQuery(sql));
  }

  static LogicalPlan withPaths(LogicalPlan plan) {
    return (LogicalPlan)
        plan.transformUpWithSubqueries(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return isDeltaPath(node) || isInsertIntoPath(node);
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (isDeltaPath(node)) {
                  return withPath((UnresolvedRelation) node);
                }
                if (!isInsertIntoPath(node)) {
                  return fallback.apply(node);
                }
                // the table an INSERT writes to is no child of the statement
                InsertIntoStatement insert = (InsertIntoStatement) node;
                return insert.copy(
                    withPath((UnresolvedRelation) insert.table()),
                    insert.partitionSpec(),
                    insert.userSpecifiedCols(),
                    insert.query(),
                    insert.overwrite(),
                    insert.ifPartitionNotExists(),
                    insert.byName());
              }
            });
  }

  private static UnresolvedRelation withPath(UnresolvedRelation relation) {
    HashMap options = new HashMap(relation.options().asCaseSensitiveMap());
    options.put("path", relation.multipartIdentifier().last());
    return relation.copy(
        relation.multipartIdentifier(),
        new CaseInsensitiveStringMap(options),
        relation.isStreaming());
  }

  private static boolean isInsertIntoPath(Object node) {
    return node instanceof InsertIntoStatement
        && isDeltaPath(((InsertIntoStatement) node).table());
  }

  static boolean isDeltaPath(Object node) {
    if (!(node instanceof UnresolvedRelation)) {
      return false;
    }
    UnresolvedRelation relation = (UnresolvedRelation) node;
    Seq parts = relation.multipartIdentifier();
    return parts.size() == 2
        && "delta".equalsIgnoreCase((String) parts.head())
        && !relation.options().containsKey("path");
  }

  public Expression parseExpression(String sql) throws ParseException {
    return delegate.parseExpression(sql);
  }

  public TableIdentifier parseTableIdentifier(String sql) throws ParseException {
    return delegate.parseTableIdentifier(sql);
  }

  public FunctionIdentifier parseFunctionIdentifier(String sql) throws ParseException {
    return delegate.parseFunctionIdentifier(sql);
  }

  public Seq parseMultipartIdentifier(String sql) throws ParseException {
    return delegate.parseMultipartIdentifier(sql);
  }

  public StructType parseRoutineParam(String sql) throws ParseException {
    return delegate.parseRoutineParam(sql);
  }

  public StructType parseTableSchema(String sql) throws ParseException {
    return delegate.parseTableSchema(sql);
  }

  public DataType parseDataType(String sql) throws ParseException {
    return delegate.parseDataType(sql);
  }
}
