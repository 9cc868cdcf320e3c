package deltapyspark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GetStructField;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression$;
import org.apache.spark.sql.catalyst.plans.logical.Assignment;
import org.apache.spark.sql.catalyst.plans.logical.DeleteAction;
import org.apache.spark.sql.catalyst.plans.logical.DeleteFromTable;
import org.apache.spark.sql.catalyst.plans.logical.InsertAction;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeAction;
import org.apache.spark.sql.catalyst.plans.logical.MergeIntoTable;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.UpdateAction;
import org.apache.spark.sql.catalyst.plans.logical.UpdateTable;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.catalyst.util.QuotingUtils$;
import org.apache.spark.sql.classic.ExpressionUtils$;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractPartialFunction;

/**
 * Spark's own MERGE INTO, UPDATE and DELETE FROM, as its parser and analyzer made them, on a
 * Delta table: a resolution rule that turns each resolved statement into a {@link
 * DeltaDmlCommand} running the Python core's command. The statement's expressions are
 * Spark's resolved ones, handed over as {@code Column}s with each table column named again by
 * its table's alias (the Python command reads the table afresh, so the analyzer's attribute
 * ids would not match): parameters, CTEs, views, {@code DataFrame.mergeInto} and Spark's
 * error messages work as on any table.
 */
public final class DeltaDml extends Rule {
  private static final String MERGE_COLUMNS =
      "num_affected_rows long, num_updated_rows long, num_deleted_rows long, "
          + "num_inserted_rows long";
  private static final String AFFECTED_COLUMNS = "num_affected_rows long";

  public TreeNode apply(TreeNode plan) {
    return ((LogicalPlan) plan)
        .resolveOperatorsDown(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return node instanceof MergeIntoTable
                    || node instanceof UpdateTable
                    || node instanceof DeleteFromTable;
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (node instanceof MergeIntoTable) {
                  return merge((MergeIntoTable) node);
                }
                if (node instanceof UpdateTable) {
                  return update((UpdateTable) node);
                }
                if (node instanceof DeleteFromTable) {
                  return delete((DeleteFromTable) node);
                }
                return fallback.apply(node);
              }
            });
  }

  private static LogicalPlan merge(MergeIntoTable merge) {
    if (!merge.resolved()) {
      return merge;
    }
    final LogicalRelation relation = deltaRelation(merge.targetTable());
    if (relation == null) {
      return MergeStars.starsOf(merge).isEmpty() ? merge : MergeStars.withStars(merge);
    }
    String targetName = aliasOf(merge.targetTable());
    String sourceName = aliasOf(merge.sourceTable());
    if (targetName == null || sourceName == null || targetName.equalsIgnoreCase(sourceName)) {
      targetName = "__delta_target";
      sourceName = "__delta_source";
    }
    final Names names =
        new Names(
            merge.targetTable().outputSet(), targetName, merge.sourceTable().outputSet(),
            sourceName);
    refuseSubquery(merge.mergeCondition(), "search condition of MERGE operation");
    final Object condition = names.column(merge.mergeCondition());
    final List clauses = new ArrayList();
    clauses(merge, merge.matchedActions(), "M", "matched", names, clauses);
    clauses(merge, merge.notMatchedActions(), "N", "notMatched", names, clauses);
    clauses(merge, merge.notMatchedBySourceActions(), "S", "notMatchedBySource", names, clauses);
    final LogicalPlan source = merge.sourceTable();
    final String target = targetName;
    final String sourceAlias = sourceName;
    final boolean evolve = merge.withSchemaEvolution();
    return new DeltaDmlCommand(
        "MERGE INTO " + tableOf(relation) + " ON " + merge.mergeCondition().sql(),
        MERGE_COLUMNS,
        new DeltaDmlCommand.Call() {
          public Object run(SparkSession session) {
            Object data =
                org.apache.spark.sql.classic.Dataset$.MODULE$.ofRows(
                    (org.apache.spark.sql.classic.SparkSession) session, source);
            return DeltaSqlParser.commands()
                .merge(
                    session, root(relation), catalogName(relation), target, data, sourceAlias,
                    condition, clauses, evolve);
          }
        });
  }

  private static void clauses(
      MergeIntoTable merge, Seq actions, String kind, String when, Names names, List out) {
    for (int i = 0; i < actions.size(); i++) {
      MergeAction action = (MergeAction) actions.apply(i);
      Map clause = new HashMap();
      clause.put("when", when);
      if (action.condition().isDefined()) {
        Expression condition = (Expression) action.condition().get();
        refuseSubquery(condition, when + " clause condition of MERGE operation");
        clause.put("condition", names.column(condition));
      }
      if (action instanceof DeleteAction) {
        clause.put("action", "delete");
      } else {
        clause.put("action", action instanceof InsertAction ? "insert" : "update");
        if (MergeStars.wasStar(merge, kind, i)) {
          clause.put("star", Boolean.TRUE);
        } else {
          Seq assignments =
              action instanceof InsertAction
                  ? ((InsertAction) action).assignments()
                  : ((UpdateAction) action).assignments();
          clause.put("assignments", names.assignments(assignments));
        }
      }
      out.add(clause);
    }
  }

  private static LogicalPlan update(UpdateTable update) {
    if (!update.resolved()) {
      return update;
    }
    final LogicalRelation relation = deltaRelation(update.table());
    if (relation == null) {
      return update;
    }
    final Names names = new Names(update.table().outputSet(), null, null, null);
    final Object condition;
    if (update.condition().isDefined()) {
      Expression where = (Expression) update.condition().get();
      refuseSubquery(where, "UPDATE");
      condition = names.column(where);
    } else {
      condition = null;
    }
    final Map assignments = names.assignments(update.assignments());
    return new DeltaDmlCommand(
        "UPDATE " + tableOf(relation)
            + (update.condition().isDefined()
                ? " WHERE " + ((Expression) update.condition().get()).sql()
                : ""),
        AFFECTED_COLUMNS,
        new DeltaDmlCommand.Call() {
          public Object run(SparkSession session) {
            return DeltaSqlParser.commands()
                .update(session, root(relation), condition, assignments);
          }
        });
  }

  private static LogicalPlan delete(DeleteFromTable delete) {
    if (!delete.resolved()) {
      return delete;
    }
    final LogicalRelation relation = deltaRelation(delete.table());
    if (relation == null) {
      return delete;
    }
    Expression where = delete.condition();
    boolean all = where instanceof Literal && Boolean.TRUE.equals(((Literal) where).value());
    refuseSubquery(where, "DELETE");
    final Object condition =
        all ? null : new Names(delete.table().outputSet(), null, null, null).column(where);
    return new DeltaDmlCommand(
        "DELETE FROM " + tableOf(relation) + (all ? "" : " WHERE " + where.sql()),
        AFFECTED_COLUMNS,
        new DeltaDmlCommand.Call() {
          public Object run(SparkSession session) {
            return DeltaSqlParser.commands().delete(session, root(relation), condition);
          }
        });
  }

  /**
   * The Delta table a statement's target reads, under its aliases, a view's node and column
   * selections of a view ({@code SELECT * FROM t}); null for anything else.
   */
  static LogicalRelation deltaRelation(LogicalPlan plan) {
    LogicalPlan node = plan;
    while (true) {
      if (node instanceof SubqueryAlias) {
        node = ((SubqueryAlias) node).child();
      } else if (node instanceof View) {
        node = ((View) node).child();
      } else if (node instanceof Project && onlyColumns((Project) node)) {
        node = ((Project) node).child();
      } else {
        break;
      }
    }
    if (!(node instanceof LogicalRelation)) {
      return null;
    }
    LogicalRelation relation = (LogicalRelation) node;
    if (relation.relation() instanceof HadoopFsRelation
        && ((HadoopFsRelation) relation.relation()).location() instanceof DeltaFileIndex) {
      return relation;
    }
    return null;
  }

  /**
   * Whether {@code project} passes its child's columns on unchanged: as they are, or under
   * their own name cast to their own type (how a view exposes its columns).
   */
  private static boolean onlyColumns(Project project) {
    Seq items = project.projectList();
    for (int i = 0; i < items.size(); i++) {
      Object item = items.apply(i);
      if (item instanceof Attribute) {
        continue;
      }
      if (!(item instanceof Alias)) {
        return false;
      }
      Alias alias = (Alias) item;
      Expression value = alias.child();
      if (value instanceof Cast) {
        Cast cast = (Cast) value;
        value = cast.dataType().equals(cast.child().dataType()) ? cast.child() : cast;
      }
      if (!(value instanceof Attribute)
          || !((Attribute) value).name().equalsIgnoreCase(alias.name())) {
        return false;
      }
    }
    return true;
  }

  /** The name a plan's columns are qualified by in the statement (its alias), or null. */
  private static String aliasOf(LogicalPlan plan) {
    if (plan instanceof SubqueryAlias) {
      return ((SubqueryAlias) plan).identifier().name();
    }
    return null;
  }

  private static String root(LogicalRelation relation) {
    return ((DeltaFileIndex) ((HadoopFsRelation) relation.relation()).location()).root();
  }

  /** The catalog name of the table (its entry is refreshed after a change), or null. */
  private static String catalogName(LogicalRelation relation) {
    return relation.catalogTable().isDefined()
        ? ((org.apache.spark.sql.catalyst.catalog.CatalogTable) relation.catalogTable().get())
            .identifier()
            .quotedString()
        : null;
  }

  private static String tableOf(LogicalRelation relation) {
    String name = catalogName(relation);
    return name != null ? name : "delta.`" + root(relation) + "`";
  }

  /** Delta refuses subqueries in DML conditions (delta-spark's DELTA_UNSUPPORTED_SUBQUERY). */
  private static void refuseSubquery(Expression condition, String operation) {
    if (SubqueryExpression$.MODULE$.hasSubquery(condition)) {
      throw DeltaSqlParser.refused(
          "DELTA_UNSUPPORTED_SUBQUERY",
          "Subqueries are not supported in the " + operation + " (condition = "
              + condition.sql() + ").");
    }
  }

  /**
   * Renames a statement's resolved columns for the Python command: a target column becomes
   * {@code targetAlias.name} (just {@code name} without an alias), a source column {@code
   * sourceAlias.name}.
   */
  private static final class Names {
    private final AttributeSet target;
    private final String targetAlias;
    private final AttributeSet source;
    private final String sourceAlias;

    Names(AttributeSet target, String targetAlias, AttributeSet source, String sourceAlias) {
      this.target = target;
      this.targetAlias = targetAlias;
      this.source = source;
      this.sourceAlias = sourceAlias;
    }

    Object column(Expression expression) {
      Expression named = (Expression) expression.transform(
          new AbstractPartialFunction() {
            public boolean isDefinedAt(Object node) {
              return node instanceof AttributeReference;
            }

            public Object applyOrElse(Object node, scala.Function1 fallback) {
              if (!(node instanceof AttributeReference)) {
                return fallback.apply(node);
              }
              AttributeReference column = (AttributeReference) node;
              if (target.contains(column)) {
                return attribute(targetAlias, column.name());
              }
              if (source != null && source.contains(column)) {
                return attribute(sourceAlias, column.name());
              }
              return column;
            }
          });
      return ExpressionUtils$.MODULE$.column(named);
    }

    /** Target column (as SQL: {@code a}, {@code s.field}) to value, in statement order. */
    Map assignments(Seq assignments) {
      Map out = new LinkedHashMap();
      for (int i = 0; i < assignments.size(); i++) {
        Assignment assignment = (Assignment) assignments.apply(i);
        out.put(columnPath(assignment.key()), column(assignment.value()));
      }
      return out;
    }

    /** An assignment's target column as the Python API names it: {@code a}, {@code s.f}. */
    private static String columnPath(Expression key) {
      if (key instanceof GetStructField) {
        GetStructField field = (GetStructField) key;
        return columnPath(field.child())
            + "."
            + QuotingUtils$.MODULE$.quoteIfNeeded(field.extractFieldName());
      }
      return QuotingUtils$.MODULE$.quoteIfNeeded(((Attribute) key).name());
    }

    private static UnresolvedAttribute attribute(String alias, String name) {
      Object[] parts = alias == null ? new Object[] {name} : new Object[] {alias, name};
      return new UnresolvedAttribute(MergeStars.seq(parts));
    }
  }
}
