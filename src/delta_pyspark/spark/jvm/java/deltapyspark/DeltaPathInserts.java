package deltapyspark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.plans.logical.InsertIntoStatement;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.execution.datasources.LogicalRelation$;
import org.apache.spark.sql.sources.BaseRelation;

/**
 * Resolves the table of {@code INSERT INTO|OVERWRITE delta.`path`}: Spark resolves {@code
 * format.`path`} tables in queries only (an insert's table is no child of the statement), so
 * this resolution rule makes it the {@code delta} source's relation, which {@link DeltaWrites}
 * then turns into the Python core's write.
 */
public final class DeltaPathInserts extends Rule {
  private final SparkSession session;

  public DeltaPathInserts(SparkSession session) {
    this.session = session;
  }

  public TreeNode apply(TreeNode plan) {
    if (!(plan instanceof InsertIntoStatement)) {
      return plan;
    }
    InsertIntoStatement insert = (InsertIntoStatement) plan;
    if (!(insert.table() instanceof UnresolvedRelation) || !insert.query().resolved()) {
      return plan;
    }
    UnresolvedRelation table = (UnresolvedRelation) insert.table();
    if (table.multipartIdentifier().size() != 2
        || !"delta".equalsIgnoreCase((String) table.multipartIdentifier().head())
        || !table.options().containsKey("path")) {
      return plan;
    }
    scala.collection.immutable.Map options =
        scala.collection.immutable.Map$.MODULE$.empty();
    java.util.Iterator it = table.options().asCaseSensitiveMap().entrySet().iterator();
    while (it.hasNext()) {
      java.util.Map.Entry option = (java.util.Map.Entry) it.next();
      options = (scala.collection.immutable.Map) options.updated(option.getKey(), option.getValue());
    }
    BaseRelation relation = new DeltaSource().createRelation(session.sqlContext(), options);
    return withTable(insert, LogicalRelation$.MODULE$.apply(relation, false));
  }

  /** {@code insert} writing to {@code table} (no child of the statement, so no transform's). */
  static InsertIntoStatement withTable(InsertIntoStatement insert, LogicalPlan table) {
    return (InsertIntoStatement) Products.with(insert, new Object[] {"table", table});
  }
}
