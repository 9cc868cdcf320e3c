package deltapyspark;

import org.apache.spark.sql.SparkSession;
import java.util.Map;
import org.apache.spark.sql.catalyst.analysis.UnresolvedIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedTable;
import org.apache.spark.sql.catalyst.analysis.UnresolvedTableOrView;
import org.apache.spark.sql.catalyst.plans.logical.AlterTableCommand;
import org.apache.spark.sql.catalyst.plans.logical.DescribeRelation;
import org.apache.spark.sql.catalyst.plans.logical.DropTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ShowColumns;
import org.apache.spark.sql.catalyst.plans.logical.ShowTableProperties;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractPartialFunction;

/**
 * Statements Spark's own parser reads whose answer on a Delta table is Delta's, found in the
 * parsed plan before resolution (Spark's V1 session catalog would answer from its entry, or
 * look {@code delta} up as a database): SHOW TBLPROPERTIES of a Delta table, DESCRIBE TABLE
 * and SHOW COLUMNS of a {@code delta.`path`}, DROP TABLE of the attached catalog's tables, and
 * the ALTER TABLE forms Spark's grammar has ({@link AlterTableChanges}) on a Delta table.
 * Python decides which are Delta's ({@code delta_pyspark.sql.spark_statements}); those become
 * a {@link DeltaDmlCommand} running there, the others stay Spark's.
 */
public final class SparkParsedStatements extends Rule {
  private final SparkSession session;

  public SparkParsedStatements(SparkSession session) {
    this.session = session;
  }

  public TreeNode apply(TreeNode plan) {
    return ((LogicalPlan) plan)
        .resolveOperatorsDown(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return node instanceof ShowTableProperties
                    || node instanceof DescribeRelation
                    || node instanceof ShowColumns
                    || node instanceof DropTable
                    || node instanceof AlterTableCommand;
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (node instanceof AlterTableCommand) {
                  AlterTableCommand alter = (AlterTableCommand) node;
                  Map change = AlterTableChanges.of(alter);
                  Seq parts =
                      change != null && alter.table() instanceof UnresolvedTable
                          ? ((UnresolvedTable) alter.table()).multipartIdentifier()
                          : null;
                  return delta(
                      (LogicalPlan) node,
                      "ALTER TABLE",
                      parts,
                      parts == null ? "" : AlterTableChanges.json(change));
                }
                if (node instanceof ShowTableProperties) {
                  ShowTableProperties show = (ShowTableProperties) node;
                  String key = show.propertyKey().isDefined() ? (String) show.propertyKey().get() : "";
                  return delta(show, "SHOW TBLPROPERTIES", tableOrView(show.table()), key);
                }
                if (node instanceof DescribeRelation) {
                  DescribeRelation describe = (DescribeRelation) node;
                  Seq parts =
                      SparkVersion.describesTable(describe) ? tableOrView(describe.relation()) : null;
                  return delta(
                      describe, "DESCRIBE TABLE", parts, describe.isExtended() ? "extended" : "");
                }
                if (node instanceof ShowColumns) {
                  ShowColumns show = (ShowColumns) node;
                  Seq parts = show.namespace().isEmpty() ? tableOrView(show.child()) : null;
                  return delta(show, "SHOW COLUMNS", parts, "");
                }
                if (node instanceof DropTable) {
                  DropTable drop = (DropTable) node;
                  Seq parts =
                      drop.child() instanceof UnresolvedIdentifier
                          ? ((UnresolvedIdentifier) drop.child()).nameParts()
                          : null;
                  return delta(drop, "DROP TABLE", parts, "");
                }
                return fallback.apply(node);
              }
            });
  }

  private static Seq tableOrView(LogicalPlan plan) {
    return plan instanceof UnresolvedTableOrView
        ? ((UnresolvedTableOrView) plan).multipartIdentifier()
        : null;
  }

  /** {@code statement} as Delta's command when Python takes it, else as it is. */
  private LogicalPlan delta(
      LogicalPlan statement, final String kind, Seq parts, final String argument) {
    if (parts == null) {
      return statement;
    }
    final String names = DeltaSqlParser.nameParts(parts);
    String answer = DeltaSqlParser.commands().sparkStatement(session, kind, names, argument);
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    if (!answer.startsWith("O")) {
      return statement;
    }
    return new DeltaDmlCommand(
        kind + " " + parts.mkString("."),
        answer.substring(1),
        new DeltaDmlCommand.Call() {
          public Object run(SparkSession runner) {
            return DeltaSqlParser.commands().runSparkStatement(runner, kind, names, argument);
          }
        });
  }
}
