package deltapyspark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.analysis.FieldName;
import org.apache.spark.sql.catalyst.analysis.FieldPosition;
import org.apache.spark.sql.catalyst.plans.logical.AddColumns;
import org.apache.spark.sql.catalyst.plans.logical.AlterColumnSpec;
import org.apache.spark.sql.catalyst.plans.logical.AlterColumns;
import org.apache.spark.sql.catalyst.plans.logical.AlterTableClusterBy;
import org.apache.spark.sql.catalyst.plans.logical.AlterTableCommand;
import org.apache.spark.sql.catalyst.plans.logical.DropColumns;
import org.apache.spark.sql.catalyst.plans.logical.QualifiedColType;
import org.apache.spark.sql.catalyst.plans.logical.RenameColumn;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceColumns;
import org.apache.spark.sql.catalyst.plans.logical.SetTableProperties;
import org.apache.spark.sql.catalyst.plans.logical.UnsetTableProperties;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.types.DataType;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * An ALTER TABLE statement as Spark's parser made it, as plain values for the Python layer
 * ({@code delta_pyspark.sql.spark_statements}): a map with {@code op} and the clause's
 * arguments, column paths as lists of names, types as Spark's JSON. Sent as JSON.
 */
final class AlterTableChanges {
  private AlterTableChanges() {}

  /** {@code alter}'s change, or null for a form the Python layer does not take. */
  static Map of(AlterTableCommand alter) {
    Map change = new HashMap();
    if (alter instanceof SetTableProperties) {
      change.put("op", "set_properties");
      change.put(
          "properties",
          new HashMap(CollectionConverters.asJava(((SetTableProperties) alter).properties())));
    } else if (alter instanceof UnsetTableProperties) {
      UnsetTableProperties unset = (UnsetTableProperties) alter;
      change.put("op", "unset_properties");
      change.put("keys", CollectionConverters.asJava(unset.propertyKeys()));
      change.put("if_exists", Boolean.valueOf(unset.ifExists()));
    } else if (alter instanceof AddColumns) {
      change.put("op", "add_columns");
      change.put("columns", columns(((AddColumns) alter).columnsToAdd()));
    } else if (alter instanceof ReplaceColumns) {
      change.put("op", "replace_columns");
    } else if (alter instanceof DropColumns) {
      DropColumns drop = (DropColumns) alter;
      List paths = new ArrayList();
      Iterator it = drop.columnsToDrop().iterator();
      while (it.hasNext()) {
        paths.add(path((FieldName) it.next()));
      }
      change.put("op", "drop_columns");
      change.put("columns", paths);
      change.put("if_exists", Boolean.valueOf(drop.ifExists()));
    } else if (alter instanceof RenameColumn) {
      RenameColumn rename = (RenameColumn) alter;
      change.put("op", "rename_column");
      change.put("column", path(rename.column()));
      change.put("new_name", rename.newName());
    } else if (alter instanceof AlterColumns) {
      change.put("op", "alter_columns");
      change.put("specs", specs(((AlterColumns) alter).specs()));
    } else if (alter instanceof AlterTableClusterBy) {
      Option spec = ((AlterTableClusterBy) alter).clusterBySpec();
      List names = new ArrayList();
      if (spec.isDefined()) {
        Iterator it =
            ((org.apache.spark.sql.catalyst.catalog.ClusterBySpec) spec.get())
                .columnNames()
                .iterator();
        while (it.hasNext()) {
          names.add(java.util.Arrays.asList(((NamedReference) it.next()).fieldNames()));
        }
      }
      change.put("op", "cluster_by");
      change.put("columns", names);
    } else {
      return null;
    }
    return change;
  }

  static String json(Map change) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(change);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("an ALTER TABLE change cannot be written as JSON", e);
    }
  }

  private static List columns(Seq columns) {
    List out = new ArrayList();
    Iterator it = columns.iterator();
    while (it.hasNext()) {
      QualifiedColType column = (QualifiedColType) it.next();
      Map one = new HashMap();
      one.put("column", CollectionConverters.asJava(column.name()));
      one.put("type", column.dataType().json());
      one.put("nullable", Boolean.valueOf(column.nullable()));
      one.put("comment", orNull(column.comment()));
      one.put("position", position(column.position()));
      // its default value (a field named "default", which Java cannot call by name)
      one.put("default", orNull((Option) column.productElement(6)));
      out.add(one);
    }
    return out;
  }

  private static List specs(Seq specs) {
    List out = new ArrayList();
    Iterator it = specs.iterator();
    while (it.hasNext()) {
      AlterColumnSpec spec = (AlterColumnSpec) it.next();
      Map one = new HashMap();
      one.put("column", path(spec.column()));
      one.put(
          "type",
          spec.newDataType().isDefined() ? ((DataType) spec.newDataType().get()).json() : null);
      one.put("nullable", orNull(spec.newNullability()));
      one.put("comment", orNull(spec.newComment()));
      one.put("position", position(spec.newPosition()));
      one.put("default", orNull(spec.newDefaultExpression()));
      out.add(one);
    }
    return out;
  }

  private static List path(FieldName name) {
    return CollectionConverters.asJava(name.name());
  }

  /** {@code first}, {@code after} and a column name, or null. */
  private static List position(Option position) {
    if (position.isEmpty()) {
      return null;
    }
    TableChange.ColumnPosition at = ((FieldPosition) position.get()).position();
    List out = new ArrayList();
    if (at instanceof TableChange.After) {
      out.add("after");
      out.add(((TableChange.After) at).column());
    } else {
      out.add("first");
    }
    return out;
  }

  private static Object orNull(Option value) {
    return value.isDefined() ? value.get() : null;
  }
}
