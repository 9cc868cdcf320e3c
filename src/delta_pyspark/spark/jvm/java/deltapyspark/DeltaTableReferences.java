package deltapyspark;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.RelationTimeTravel;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.plans.logical.InsertIntoStatement;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.runtime.AbstractPartialFunction;

/**
 * Table references the parser cannot see, made Delta reads in the hint batch that runs before
 * resolution: plans built without SQL text ({@code spark.read.table}, {@code
 * DataFrame.mergeInto}) and the statement inside {@code EXPLAIN}.
 *
 * <ul>
 *   <li>{@code delta.`path`} gets its path as the {@code path} option, as {@link
 *       DeltaSqlParser} gives it.
 *   <li>A table name read with the {@code versionAsOf}/{@code timestampAsOf} options ({@code
 *       spark.read.option("versionAsOf", 0).table("t")}) is the time travel {@link
 *       DeltaSqlParser} makes of {@code t VERSION AS OF 0}: Spark refuses time travel on its
 *       V1 tables, which Delta tables by name are here.
 *   <li>{@code INSERT INTO t REPLACE WHERE cond query} (and {@code df.writeTo(t).overwrite(cond)})
 *       on a Delta table is the overwrite with the {@code replaceWhere} option delta-spark
 *       makes of it: Spark plans it for V2 tables only, and refuses a V1 table by name
 *       ("Cannot write into v1 table") or a {@code delta.`path`} as a missing table. A
 *       {@code replaceWhere} option besides the condition is refused, as delta-spark refuses
 *       it.
 * </ul>
 */
public final class DeltaTableReferences extends Rule {
  private static final String REPLACE_WHERE = "replaceWhere";
  private static final String REPLACE_WHERE_IN_OVERWRITE = "DELTA_REPLACE_WHERE_IN_OVERWRITE";
  private static final String REPLACE_WHERE_IN_OVERWRITE_TEXT =
      "You can't use replaceWhere in conjunction with an overwrite by filter";

  private final SparkSession session;

  public DeltaTableReferences(SparkSession session) {
    this.session = session;
  }

  public TreeNode apply(TreeNode plan) {
    return ((LogicalPlan) plan)
        .resolveOperatorsUp(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return DeltaSqlParser.isDeltaPath(node)
                    || travelsByOptions(node)
                    || node instanceof OverwriteByExpression
                    || SparkVersion.insertReplaceWhere(node) != null;
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (DeltaSqlParser.isDeltaPath(node)) {
                  return DeltaSqlParser.withPath((UnresolvedRelation) node);
                }
                if (travelsByOptions(node)) {
                  return byOptions((UnresolvedRelation) node);
                }
                if (node instanceof OverwriteByExpression) {
                  OverwriteByExpression overwrite = (OverwriteByExpression) node;
                  return replaceWhere(
                      overwrite,
                      // its table: Janino finds two table() methods on Spark 4.3
                      (LogicalPlan) overwrite.productElement(0),
                      overwrite.deleteExpr(),
                      overwrite.query(),
                      overwrite.writeOptions(),
                      overwrite.isByName());
                }
                Expression where = SparkVersion.insertReplaceWhere(node);
                if (where != null) {
                  InsertIntoStatement insert = (InsertIntoStatement) node;
                  return replaceWhere(
                      insert,
                      insert.table(),
                      where,
                      insert.query(),
                      scala.collection.immutable.Map$.MODULE$.empty(),
                      insert.byName());
                }
                return fallback.apply(node);
              }
            });
  }

  /**
   * An overwrite of the rows matching a condition, on a Delta table, as Spark's insert with
   * the condition as the {@code replaceWhere} write option (the condition as SQL text, which
   * the write parses); any other table's ({@code statement} itself) is left to Spark.
   */
  private LogicalPlan replaceWhere(
      LogicalPlan statement,
      LogicalPlan written,
      Expression condition,
      LogicalPlan query,
      scala.collection.Map writeOptions,
      boolean byName) {
    if (!(written instanceof UnresolvedRelation)) {
      return statement;
    }
    UnresolvedRelation table = (UnresolvedRelation) written;
    boolean byPath = DeltaSqlParser.isDeltaPath(table);
    if (!byPath && !DeltaSqlParser.isDeltaTable(session, table)) {
      return statement;
    }
    if (condition.containsPattern(
        org.apache.spark.sql.catalyst.trees.TreePattern$.MODULE$.PARAMETER())) {
      throw DeltaSqlParser.refused(
          "UNSUPPORTED_FEATURE.PARAMETER_MARKER_IN_UNEXPECTED_STATEMENT",
          "Parameter markers are not allowed in the condition of INSERT ... REPLACE WHERE on "
              + "a Delta table: write the values into the condition.");
    }
    Map options = new HashMap(table.options().asCaseSensitiveMap());
    scala.collection.Iterator given = writeOptions.iterator();
    while (given.hasNext()) {
      scala.Tuple2 option = (scala.Tuple2) given.next();
      options.put(option._1(), option._2());
    }
    for (Object key : options.keySet()) {
      if (REPLACE_WHERE.equalsIgnoreCase((String) key)) {
        throw DeltaSqlParser.refused(REPLACE_WHERE_IN_OVERWRITE, REPLACE_WHERE_IN_OVERWRITE_TEXT);
      }
    }
    options.put(REPLACE_WHERE, condition.sql());
    UnresolvedRelation target =
        new UnresolvedRelation(
            table.multipartIdentifier(), new CaseInsensitiveStringMap(options), false);
    InsertIntoStatement insert =
        (InsertIntoStatement)
            Products.create(
                InsertIntoStatement.class,
                new Object[] {
                  target,
                  scala.collection.immutable.Map$.MODULE$.empty(),
                  scala.collection.immutable.Nil$.MODULE$,
                  query,
                  Boolean.TRUE,
                  Boolean.FALSE,
                  Boolean.valueOf(byName)
                });
    return byPath
        ? DeltaPathInserts.withTable(insert, DeltaSqlParser.withPath(target))
        : insert;
  }

  private static boolean travelsByOptions(Object node) {
    if (!(node instanceof UnresolvedRelation)) {
      return false;
    }
    CaseInsensitiveStringMap options = ((UnresolvedRelation) node).options();
    return !options.containsKey("path")
        && (options.containsKey("versionAsOf") || options.containsKey("timestampAsOf"));
  }

  private LogicalPlan byOptions(UnresolvedRelation relation) {
    Map kept = new HashMap(relation.options().asCaseSensitiveMap());
    String version = null;
    String timestamp = null;
    for (Object key : relation.options().asCaseSensitiveMap().keySet()) {
      String name = (String) key;
      if (name.equalsIgnoreCase("versionAsOf")) {
        version = (String) kept.remove(name);
      } else if (name.equalsIgnoreCase("timestampAsOf")) {
        timestamp = (String) kept.remove(name);
      }
    }
    RelationTimeTravel travel =
        new RelationTimeTravel(
            new UnresolvedRelation(
                relation.multipartIdentifier(),
                new CaseInsensitiveStringMap(kept),
                relation.isStreaming()),
            timestamp == null
                ? Option.empty()
                : Option.apply(Literal$.MODULE$.create(timestamp, DataTypes.StringType)),
            Option.apply(version));
    LogicalPlan read = DeltaSqlParser.timeTravel(session, travel);
    return read == travel ? relation : read; // not a Delta table: Spark says what it says
  }
}
