package deltapyspark;

import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.catalyst.analysis.UnresolvedIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.CreateTable;
import org.apache.spark.sql.catalyst.plans.logical.CreateTableAsSelect;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceTable;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceTableAsSelect;
import org.apache.spark.sql.catalyst.plans.logical.TableSpecBase;
import org.apache.spark.sql.catalyst.plans.logical.UnresolvedTableSpec;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.Tuple2;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A table definition Spark only plans for V2 catalogs ({@code CREATE OR REPLACE TABLE}, {@code
 * REPLACE TABLE}, {@code DataFrameWriterV2}) or cannot make ({@link #isDeltaCreate}), as plain
 * values the Python layer can act on: a map with {@code name} (the multipart name), {@code
 * provider}, {@code location}, {@code comment} (each null when absent), {@code properties} and
 * {@code options} (string maps), {@code partitioning} and {@code clustering} (column names),
 * {@code schema} (JSON, for a statement without a query), {@code orCreate}, {@code create} and
 * {@code ifNotExists}.
 */
public final class TableDefinitions {
  /** The table property that asks for a catalog-managed table. */
  private static final String CATALOG_MANAGED = "delta.feature.catalogManaged";
  /** Spark parser's column metadata for {@code GENERATED ALWAYS AS (expr)} and identity. */
  private static final String SPARK_GENERATION = "GENERATION_EXPRESSION";
  private static final String SPARK_IDENTITY_START = "identity.start";

  private TableDefinitions() {}

  /**
   * Whether {@code plan} creates a Delta table Spark's own CREATE TABLE cannot make: at a
   * {@code delta.`path`} (Spark would look {@code delta} up as a database; any provider, which
   * the Python layer refuses unless it is delta), or {@code USING delta} with identity or
   * generated columns (Spark's session catalog refuses them), or catalog-managed (made by the
   * attached catalog).
   */
  static boolean isDeltaCreate(LogicalPlan plan) {
    LogicalPlan name;
    TableSpecBase spec;
    StructType schema;
    if (plan instanceof CreateTable) {
      name = ((CreateTable) plan).name();
      spec = ((CreateTable) plan).tableSpec();
      schema = ((CreateTable) plan).tableSchema();
    } else if (plan instanceof CreateTableAsSelect) {
      name = ((CreateTableAsSelect) plan).name();
      spec = ((CreateTableAsSelect) plan).tableSpec();
      schema = new StructType();
    } else {
      return false;
    }
    if (!(name instanceof UnresolvedIdentifier)) {
      return false;
    }
    Seq parts = ((UnresolvedIdentifier) name).nameParts();
    if (parts.size() == 2 && "delta".equalsIgnoreCase((String) parts.head())) {
      return true;
    }
    if (!isDelta(spec)) {
      return false;
    }
    Iterator keys = spec.properties().keysIterator();
    while (keys.hasNext()) {
      if (CATALOG_MANAGED.equalsIgnoreCase((String) keys.next())) {
        return true;
      }
    }
    StructField[] fields = schema.fields();
    for (int i = 0; i < fields.length; i++) {
      Metadata metadata = fields[i].metadata();
      if (metadata.contains(SPARK_GENERATION) || metadata.contains(SPARK_IDENTITY_START)) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code plan} replaces a table with a Delta table ({@code USING delta}). */
  static boolean isDeltaReplace(LogicalPlan plan) {
    if (plan instanceof ReplaceTableAsSelect) {
      return isDelta(((ReplaceTableAsSelect) plan).tableSpec());
    }
    return plan instanceof ReplaceTable && isDelta(((ReplaceTable) plan).tableSpec());
  }

  private static boolean isDelta(TableSpecBase spec) {
    return spec.provider().isDefined() && "delta".equalsIgnoreCase((String) spec.provider().get());
  }

  /** The query of a plan {@link #ofPlan} takes (AS SELECT), else null. */
  static LogicalPlan queryOf(LogicalPlan plan) {
    if (plan instanceof ReplaceTableAsSelect) {
      return ((ReplaceTableAsSelect) plan).query();
    }
    return plan instanceof CreateTableAsSelect ? ((CreateTableAsSelect) plan).query() : null;
  }

  /**
   * The definition of a {@code [CREATE OR] REPLACE TABLE} or {@code CREATE TABLE} statement's
   * plan ({@code create}: true for the latter, with {@code ifNotExists}).
   */
  static Map ofPlan(LogicalPlan plan) {
    Map definition = new HashMap();
    LogicalPlan name;
    TableSpecBase spec;
    Seq partitioning;
    definition.put("create", Boolean.FALSE);
    if (plan instanceof CreateTable) {
      CreateTable create = (CreateTable) plan;
      name = create.name();
      spec = create.tableSpec();
      partitioning = create.partitioning();
      definition.put("create", Boolean.TRUE);
      definition.put("ifNotExists", Boolean.valueOf(create.ignoreIfExists()));
      definition.put("schema", create.tableSchema().json());
      definition.put("options", new HashMap());
    } else if (plan instanceof CreateTableAsSelect) {
      CreateTableAsSelect create = (CreateTableAsSelect) plan;
      name = create.name();
      spec = create.tableSpec();
      partitioning = create.partitioning();
      definition.put("create", Boolean.TRUE);
      definition.put("ifNotExists", Boolean.valueOf(create.ignoreIfExists()));
      definition.put("options", CollectionConverters.asJava(create.writeOptions()));
    } else if (plan instanceof ReplaceTableAsSelect) {
      ReplaceTableAsSelect replace = (ReplaceTableAsSelect) plan;
      name = replace.name();
      spec = replace.tableSpec();
      partitioning = replace.partitioning();
      definition.put("orCreate", Boolean.valueOf(replace.orCreate()));
      definition.put("options", CollectionConverters.asJava(replace.writeOptions()));
    } else {
      ReplaceTable replace = (ReplaceTable) plan;
      name = replace.name();
      spec = replace.tableSpec();
      partitioning = replace.partitioning();
      definition.put("orCreate", Boolean.valueOf(replace.orCreate()));
      definition.put("schema", replace.tableSchema().json());
      definition.put("options", new HashMap());
    }
    definition.put("name", strings(((UnresolvedIdentifier) name).nameParts()));
    definition.put("provider", orNull(spec.provider()));
    definition.put("location", orNull(spec.location()));
    definition.put("comment", orNull(spec.comment()));
    definition.put("properties", CollectionConverters.asJava(spec.properties()));
    if (spec instanceof UnresolvedTableSpec) {
      Map options = (Map) definition.get("options");
      options = new HashMap(options);
      options.putAll(literalOptions(((UnresolvedTableSpec) spec).optionExpression().options()));
      definition.put("options", options);
    }
    splitPartitioning(partitioning, definition);
    return definition;
  }

  /**
   * The definition a {@code df.writeTo(name)} writer was given ({@code using}, {@code option},
   * {@code tableProperty}, {@code partitionedBy}, {@code clusterBy}): Spark's writer keeps them
   * private and builds V2 plans from them, which a session catalog table cannot take.
   */
  public static Map ofWriter(Object writer) {
    Map definition = new HashMap();
    definition.put("name", strings((Seq) field(writer, "tableName")));
    definition.put("provider", orNull((Option) field(writer, "provider")));
    definition.put("location", null);
    definition.put("comment", null);
    definition.put(
        "options",
        new HashMap(CollectionConverters.asJava((scala.collection.Map) field(writer, "options"))));
    Map properties =
        new HashMap(
            CollectionConverters.asJava((scala.collection.Map) field(writer, "properties")));
    // DataFrameWriterV2 keeps LOCATION and COMMENT among the properties, as V2 catalogs do
    definition.put("location", properties.remove("location"));
    definition.put("comment", properties.remove("comment"));
    properties.remove("provider");
    definition.put("properties", properties);
    definition.put("orCreate", Boolean.FALSE);
    Option partitioning = (Option) field(writer, "partitioning");
    Option clustering = (Option) field(writer, "clustering");
    Seq transforms = scala.collection.immutable.Nil$.MODULE$;
    if (partitioning.isDefined()) {
      transforms = (Seq) partitioning.get();
    }
    if (clustering.isDefined()) {
      transforms = (Seq) transforms.$colon$plus(clustering.get());
    }
    splitPartitioning(transforms, definition);
    return definition;
  }

  private static Object field(Object owner, String name) {
    try {
      Field field = owner.getClass().getDeclaredField(name);
      field.setAccessible(true);
      return field.get(owner);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "DataFrameWriterV2 of this Spark version has no field " + name + ": " + e);
    }
  }

  /** Identity transforms as {@code partitioning}, a CLUSTER BY as {@code clustering}. */
  private static void splitPartitioning(Seq transforms, Map definition) {
    java.util.List partitions = new java.util.ArrayList();
    java.util.List clustering = new java.util.ArrayList();
    Iterator it = transforms.iterator();
    while (it.hasNext()) {
      Transform transform = (Transform) it.next();
      java.util.List target;
      if ("identity".equals(transform.name())) {
        target = partitions;
      } else if ("cluster_by".equals(transform.name())) {
        target = clustering;
      } else {
        throw DeltaSource.error(
            "[DELTA_OPERATION_NOT_ALLOWED] Delta tables are partitioned by columns, not by "
                + transform.describe());
      }
      org.apache.spark.sql.connector.expressions.Expression[] arguments = transform.arguments();
      for (int i = 0; i < arguments.length; i++) {
        String[] parts = ((NamedReference) arguments[i]).fieldNames();
        target.add(quoted(parts));
      }
    }
    definition.put("partitioning", partitions.toArray(new String[0]));
    definition.put("clustering", clustering.toArray(new String[0]));
  }

  private static String quoted(String[] parts) {
    if (parts.length == 1) {
      return parts[0];
    }
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < parts.length; i++) {
      if (i > 0) {
        out.append('.');
      }
      out.append('`').append(parts[i].replace("`", "``")).append('`');
    }
    return out.toString();
  }

  private static Map literalOptions(Seq options) {
    Map out = new HashMap();
    Iterator it = options.iterator();
    while (it.hasNext()) {
      Tuple2 option = (Tuple2) it.next();
      Expression value = (Expression) option._2();
      if (!(value instanceof Literal)) {
        throw DeltaSource.error(
            "OPTIONS of a Delta table take literal values; " + option._1() + " = " + value.sql());
      }
      Object literal = ((Literal) value).value();
      out.put(option._1(), literal == null ? null : literal.toString());
    }
    return out;
  }

  private static String[] strings(Seq values) {
    String[] out = new String[values.length()];
    for (int i = 0; i < out.length; i++) {
      out[i] = (String) values.apply(i);
    }
    return out;
  }

  private static Object orNull(Option value) {
    return value.isDefined() ? value.get() : null;
  }
}
