package deltapyspark;

import java.util.ArrayList;
import org.apache.spark.sql.catalyst.expressions.Add;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.CreateNamedStruct;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GetStructField;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.MetadataAttributeWithLogicalName$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.PlanExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.execution.datasources.FileFormat$;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.Tuple2;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;

/**
 * A row's stable id and commit version in {@code _metadata}, as delta-spark gives them: over
 * each scan of a table with row tracking that reads {@code _metadata}, a projection rebuilds
 * the struct with {@code row_id = coalesce(row_id, base_row_id + row_index)} and {@code
 * row_commit_version = coalesce(row_commit_version, default_row_commit_version)} (the
 * materialized value when the file has one, else the file's default; {@link
 * RowTrackingFields}). A plan normalization rule: it runs once on the analyzed plan, before
 * the optimizer prunes the struct to the fields read, so the fields it needs are scanned.
 */
public final class RowTrackingIds extends Rule {
  public TreeNode apply(TreeNode plan) {
    return rewrite((LogicalPlan) plan);
  }

  private static LogicalPlan rewrite(LogicalPlan plan) {
    return (LogicalPlan)
        plan.transformUpWithNewOutput(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return true;
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                AttributeReference metadata = metadataOfScan((LogicalPlan) node);
                if (metadata == null) {
                  return new Tuple2(inSubqueries((LogicalPlan) node), DeltaFileIndex.emptySeq());
                }
                return project((LogicalPlan) node, metadata);
              }
            },
            new AbstractFunction1() {
              public Object apply(Object node) {
                return Boolean.FALSE;
              }
            },
            new AbstractFunction1() {
              public Object apply(Object node) {
                return Boolean.valueOf(((LogicalPlan) node).resolved());
              }
            });
  }

  /** The {@code _metadata} attribute a scan of a row-tracking table outputs, else null. */
  private static AttributeReference metadataOfScan(LogicalPlan node) {
    if (!(node instanceof LogicalRelation)
        || !(((LogicalRelation) node).relation() instanceof HadoopFsRelation)) {
      return null;
    }
    Object format = ((HadoopFsRelation) ((LogicalRelation) node).relation()).fileFormat();
    if (!(format instanceof DeltaParquetFormat)
        || ((DeltaParquetFormat) format).rowTracking == null) {
      return null;
    }
    Iterator output = node.output().iterator();
    while (output.hasNext()) {
      Object attribute = output.next();
      if (attribute instanceof AttributeReference) {
        Option named = MetadataAttributeWithLogicalName$.MODULE$.unapply((AttributeReference) attribute);
        if (named.isDefined()
            && FileFormat$.MODULE$.METADATA_NAME().equals(((Tuple2) named.get())._2())) {
          return (AttributeReference) attribute;
        }
      }
    }
    return null;
  }

  /** The scan under a projection of its output with the stable values in {@code metadata}. */
  private static Tuple2 project(LogicalPlan scan, AttributeReference metadata) {
    StructType type = (StructType) metadata.dataType();
    Expression[] fields = new Expression[type.fields().length * 2];
    for (int i = 0; i < type.fields().length; i++) {
      String name = type.fields()[i].name();
      Expression value = field(metadata, name);
      if (name.equals(RowTrackingFields.ROW_ID)) {
        value =
            coalesce(
                value,
                new Add(
                    field(metadata, RowTrackingFields.BASE_ROW_ID),
                    field(metadata, ParquetFileFormat.ROW_INDEX())));
      } else if (name.equals(RowTrackingFields.ROW_COMMIT_VERSION)) {
        value = coalesce(value, field(metadata, RowTrackingFields.DEFAULT_ROW_COMMIT_VERSION));
      }
      fields[2 * i] = Literal$.MODULE$.apply(name);
      fields[2 * i + 1] = value;
    }
    Alias stable =
        new Alias(
            new CreateNamedStruct(MergeStars.seq(fields)),
            metadata.name(),
            NamedExpression$.MODULE$.newExprId(),
            DeltaFileIndex.emptySeq(),
            Option.empty(),
            DeltaFileIndex.emptySeq());
    ArrayList projected = new ArrayList();
    Iterator output = scan.output().iterator();
    while (output.hasNext()) {
      Object attribute = output.next();
      projected.add(attribute == metadata ? stable : attribute);
    }
    Tuple2 renamed = new Tuple2(metadata, stable.toAttribute());
    return new Tuple2(
        new Project(MergeStars.seq(projected.toArray()), scan),
        MergeStars.seq(new Object[] {renamed}));
  }

  private static Expression field(AttributeReference metadata, String name) {
    int ordinal = ((StructType) metadata.dataType()).fieldIndex(name);
    return new GetStructField(metadata, ordinal, Option.apply(name));
  }

  private static Expression coalesce(Expression first, Expression second) {
    return new Coalesce(MergeStars.seq(new Object[] {first, second}));
  }

  /** {@code node} with the plans of its subqueries rewritten. */
  private static LogicalPlan inSubqueries(LogicalPlan node) {
    return (LogicalPlan)
        node.transformExpressions(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object expression) {
                return expression instanceof PlanExpression
                    && ((PlanExpression) expression).plan() instanceof LogicalPlan;
              }

              public Object applyOrElse(Object expression, scala.Function1 fallback) {
                if (!isDefinedAt(expression)) {
                  return fallback.apply(expression);
                }
                PlanExpression subquery = (PlanExpression) expression;
                return subquery.withNewPlan(rewrite((LogicalPlan) subquery.plan()));
              }
            });
  }
}
