package deltapyspark;

import java.net.URI;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.command.CreateDataSourceTableAsSelectCommand;
import org.apache.spark.sql.execution.command.CreateDataSourceTableCommand;
import org.apache.spark.sql.execution.command.TruncateTableCommand;
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.Tuple2;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;

/**
 * Spark's plans of writes to Delta tables, made to go through the Python core's write command
 * and transaction. A post-hoc resolution rule: it sees the commands Spark's {@code
 * DataSourceAnalysis} made, with their queries analysed and cast to the table's columns.
 *
 * <ul>
 *   <li>SQL inserts ({@code INSERT INTO|OVERWRITE [PARTITION (...)]}, {@code insertInto}):
 *       Spark plans a plain Parquet write into the table's directory ({@link
 *       InsertIntoHadoopFsRelationCommand}; an overwrite would delete the log with the data).
 *       It becomes a {@link DeltaInsert}; static partition values become an overwrite's {@code
 *       replaceWhere}, as in delta-spark.
 *   <li>{@code CREATE TABLE ... USING delta AS SELECT}: Spark's V1 command passes the source
 *       only the table's options, so the partition columns, table properties and comment are
 *       added to them (the source's {@code createRelation} writes the table, Spark registers
 *       it).
 *   <li>{@code CREATE TABLE t (columns) USING delta} where no Delta table exists yet: run as an
 *       empty CREATE TABLE AS SELECT, so version 0 of the log holds the schema, partition
 *       columns and properties, as delta-spark's does. Over an existing table Spark's command
 *       registers it (the log's schema wins, see {@link DeltaSource}).
 *   <li>{@code TRUNCATE TABLE} of a Delta table: Spark's V1 command would delete every file
 *       under the table's location, its log too (history and time travel gone). It becomes a
 *       {@link DeltaCommand} that removes every file in a new version, as delta-spark does;
 *       a partition spec is refused there, as in delta-spark.
 * </ul>
 */
public final class DeltaWrites extends Rule {
  /** Option naming the operation a write records in its commit (CREATE TABLE, ...). */
  static final String OPERATION_OPTION = "__delta_operation";

  /** Option holding a statement's TBLPROPERTIES (a JSON object), user keys included. */
  static final String PROPERTIES_OPTION = "__delta_properties";

  /** Option holding the schema a CREATE TABLE declares (Spark's JSON), as declared. */
  static final String DECLARED_SCHEMA_OPTION = "__delta_declared_schema";

  /**
   * Option naming the columns an INSERT with a column list left out (Spark fills them with a
   * bare null literal), separated by U+0001: an identity or generated column left out gets its
   * values, where a null written explicitly is a value.
   */
  static final String OMITTED_COLUMNS_OPTION = "__delta_omitted_columns";

  /**
   * Option every catalog entry of a Delta table carries (Spark hands a catalog table's options
   * to the source): tells a catalog read, whose catalog schema the log's overrides, from a read
   * given a schema by the user, which is refused.
   */
  static final String CATALOG_OPTION = "__delta_catalog_table";

  public TreeNode apply(TreeNode plan) {
    if (plan instanceof TruncateTableCommand) {
      return truncate((TruncateTableCommand) plan);
    }
    if (plan instanceof InsertIntoHadoopFsRelationCommand) {
      return insert((InsertIntoHadoopFsRelationCommand) plan);
    }
    if (plan instanceof CreateDataSourceTableAsSelectCommand) {
      CreateDataSourceTableAsSelectCommand ctas = (CreateDataSourceTableAsSelectCommand) plan;
      CatalogTable table = ctas.table();
      if (isDelta(table) && !table.storage().properties().contains(OPERATION_OPTION)) {
        return new CreateDataSourceTableAsSelectCommand(
            withWriteOptions(table, "CREATE TABLE AS SELECT", table.schema()),
            ctas.mode(),
            ctas.query(),
            ctas.outputColumnNames());
      }
    }
    if (plan instanceof CreateDataSourceTableCommand) {
      CreateDataSourceTableCommand create = (CreateDataSourceTableCommand) plan;
      CatalogTable table = create.table();
      if (isDelta(table) && !table.storage().properties().contains(CATALOG_OPTION)
          && hasLog(table)) { // registering an existing table
        Map options = (Map) table.storage().properties().updated(CATALOG_OPTION, "true");
        return new DeltaRegister(
            new CreateDataSourceTableCommand(
                withOptions(table, options, table.schema()), create.ignoreIfExists()));
      }
      if (isDelta(table) && table.schema().nonEmpty() && !hasLog(table)) {
        StructType schema = table.schema();
        // Spark's CTAS takes its schema from the query; the declared one (NOT NULL columns
        // kept, which a write of rows relaxes) travels as an option.
        CatalogTable created = withWriteOptions(table, "CREATE TABLE", new StructType());
        Map declared =
            (Map) created.storage().properties().updated(DECLARED_SCHEMA_OPTION, schema.json());
        return new CreateDataSourceTableAsSelectCommand(
            withOptions(created, declared, new StructType()),
            create.ignoreIfExists() ? SaveMode.Ignore : SaveMode.ErrorIfExists,
            new LocalRelation(
                DataTypeUtils.toAttributes(schema),
                scala.collection.immutable.Nil$.MODULE$,
                false,
                Option.empty()),
            scala.collection.immutable.List$.MODULE$.from(
                scala.Predef$.MODULE$.wrapRefArray((Object[]) schema.fieldNames())));
      }
    }
    return plan;
  }

  private static TreeNode insert(InsertIntoHadoopFsRelationCommand insert) {
    Option index = insert.fileIndex();
    if (index.isEmpty() || !(index.get() instanceof DeltaFileIndex)) {
      return insert;
    }
    if (insert.ifPartitionNotExists()) {
      throw DeltaSource.error(
          "INSERT OVERWRITE ... IF NOT EXISTS is not supported on Delta tables");
    }
    boolean overwrite = insert.mode() == SaveMode.Overwrite;
    StringBuilder options = new StringBuilder(DeltaSource.encode(writeOptions(insert.options())));
    StringBuilder where = new StringBuilder();
    Iterator statics = insert.staticPartitions().iterator();
    while (statics.hasNext()) {
      Tuple2 value = (Tuple2) statics.next();
      if (where.length() > 0) {
        where.append(" AND ");
      }
      where
          .append('`')
          .append(((String) value._1()).replace("`", "``"))
          .append("` = '")
          .append(((String) value._2()).replace("\\", "\\\\").replace("'", "\\'"))
          .append('\'');
    }
    if (overwrite && where.length() > 0) {
      options.append("replaceWhere").append('\0').append(where).append('\0');
    }
    String omitted = omittedColumns(insert.query());
    if (omitted.length() > 0) {
      options.append(OMITTED_COLUMNS_OPTION).append('\0').append(omitted).append('\0');
    }
    return new DeltaInsert(
        ((DeltaFileIndex) index.get()).root(),
        overwrite ? "overwrite" : "append",
        options.toString(),
        insert.query());
  }

  /** The columns Spark filled with a bare null literal (see {@link #OMITTED_COLUMNS_OPTION}). */
  private static String omittedColumns(LogicalPlan query) {
    StringBuilder names = new StringBuilder();
    if (!(query instanceof Project)) {
      return "";
    }
    Iterator it = ((Project) query).projectList().iterator();
    while (it.hasNext()) {
      Object column = it.next();
      if (column instanceof Alias
          && ((Alias) column).child() instanceof Literal
          && ((Literal) ((Alias) column).child()).value() == null) {
        if (names.length() > 0) {
          names.append('\u0001');
        }
        names.append(((Alias) column).name());
      }
    }
    return names.toString();
  }

  /**
   * An insert's options without what a catalog table's entry keeps from its creation (the
   * operation, partition columns, comment and {@code delta.*} properties CTAS passed the
   * source): the log holds the table's properties now, changed by ALTER TABLE since maybe.
   */
  private static Map writeOptions(Map options) {
    if (options instanceof org.apache.spark.sql.catalyst.util.CaseInsensitiveMap) {
      options = ((org.apache.spark.sql.catalyst.util.CaseInsensitiveMap) options).originalMap();
    }
    Map kept = scala.collection.immutable.Map$.MODULE$.empty();
    Iterator it = options.iterator();
    while (it.hasNext()) {
      Tuple2 option = (Tuple2) it.next();
      String key = ((String) option._1()).toLowerCase(java.util.Locale.ROOT);
      if (!key.startsWith("__delta_") && !key.equals("__partition_columns")
          && !key.startsWith("delta.")) {
        kept = (Map) kept.updated(option._1(), option._2());
      }
    }
    return kept;
  }

  private static boolean isDelta(CatalogTable table) {
    return table.provider().isDefined()
        && "delta".equalsIgnoreCase((String) table.provider().get());
  }

  private static TreeNode truncate(TruncateTableCommand truncate) {
    TableIdentifier name = truncate.tableName();
    CatalogTable table;
    try {
      table = SparkSession.active().sessionState().catalog().getTableMetadata(name);
    } catch (Exception e) { // no such table: Spark's command reports it
      return truncate;
    }
    if (!isDelta(table)) {
      return truncate;
    }
    // the Python statement refuses a partition spec, as delta-spark does
    final String partition = truncate.partitionSpec().isDefined() ? "partition" : "";
    final String names = DeltaSqlParser.nameParts(table.identifier().nameParts());
    return new DeltaDmlCommand(
        "TRUNCATE TABLE " + table.identifier().quotedString(),
        "",
        new DeltaDmlCommand.Call() {
          public Object run(SparkSession session) {
            return DeltaSqlParser.commands()
                .runSparkStatement(session, "TRUNCATE TABLE", names, partition);
          }
        });
  }

  private static boolean hasLog(CatalogTable table) {
    SparkSession session = SparkSession.active();
    URI location =
        table.storage().locationUri().isDefined()
            ? (URI) table.storage().locationUri().get()
            : session.sessionState().catalog().defaultTablePath(table.identifier());
    try {
      Path log = new Path(new Path(location), "_delta_log");
      return log.getFileSystem(session.sessionState().newHadoopConf()).exists(log);
    } catch (java.io.IOException e) {
      throw DeltaSource.error("cannot check " + location + " for a Delta table: " + e);
    }
  }

  /** {@code table} with its partition columns, properties, comment and the operation as options. */
  private static CatalogTable withWriteOptions(
      CatalogTable table, String operation, StructType schema) {
    Map options = (Map) table.storage().properties().$plus$plus(table.properties());
    options = (Map) options.updated(OPERATION_OPTION, operation);
    options = (Map) options.updated(CATALOG_OPTION, "true");
    if (table.partitionColumnNames().nonEmpty()) {
      options =
          (Map) options.updated("__partition_columns", jsonStrings(table.partitionColumnNames()));
    }
    if (table.comment().isDefined()) {
      options = (Map) options.updated("__delta_description", (String) table.comment().get());
    }
    if (table.properties().nonEmpty()) { // all of them, user keys too, spelled as written
      options = (Map) options.updated(PROPERTIES_OPTION, jsonObject(table.properties()));
    }
    return withOptions(table, options, schema);
  }

  /** {@code table} with {@code options} as its storage properties and {@code schema}. */
  private static CatalogTable withOptions(CatalogTable table, Map options, StructType schema) {
    return (CatalogTable)
        Products.with(
            table,
            new Object[] {
              "storage", Products.with(table.storage(), new Object[] {"properties", options}),
              "schema", schema
            });
  }

  private static String jsonStrings(Seq values) {
    StringBuilder out = new StringBuilder("[");
    Iterator it = values.iterator();
    while (it.hasNext()) {
      jsonString(out, (String) it.next());
      if (it.hasNext()) {
        out.append(',');
      }
    }
    return out.append(']').toString();
  }

  /** {@code properties} as a JSON object of strings. */
  private static String jsonObject(Map properties) {
    StringBuilder out = new StringBuilder("{");
    Iterator it = properties.iterator();
    while (it.hasNext()) {
      scala.Tuple2 entry = (scala.Tuple2) it.next();
      jsonString(out, (String) entry._1());
      jsonString(out.append(':'), (String) entry._2());
      if (it.hasNext()) {
        out.append(',');
      }
    }
    return out.append('}').toString();
  }

  private static void jsonString(StringBuilder out, String value) {
    out.append('"');
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", new Object[] {Integer.valueOf(c)}));
      } else {
        out.append(c);
      }
    }
    out.append('"');
  }

  /**
   * Registers the Delta table at {@code location} in the session catalog as {@code
   * database.table} (managed: DROP TABLE deletes its files). {@code schemaJson}: the log's
   * schema with the partition columns last, as Spark's catalog keeps them; the log stays the
   * source of truth.
   */
  public static void register(
      SparkSession session, String database, String table, String location, boolean managed,
      String schemaJson, String[] partitionColumns) {
    TableIdentifier ident =
        new TableIdentifier(table, Option.apply(database), Option.apply("spark_catalog"));
    Object storage =
        Products.with(
            CatalogStorageFormat.empty(),
            new Object[] {
              "locationUri", Option.apply(new Path(location).toUri()),
              "properties",
                  scala.collection.immutable.Map$.MODULE$.empty().updated(CATALOG_OPTION, "true")
            });
    Object created =
        Products.create(
            CatalogTable.class,
            new Object[] {
              ident,
              managed ? CatalogTableType.MANAGED() : CatalogTableType.EXTERNAL(),
              storage,
              DataType.fromJson(schemaJson)
            });
    CatalogTable entry =
        (CatalogTable)
            Products.with(
                created,
                new Object[] {
                  "provider", Option.apply("delta"),
                  "partitionColumnNames",
                      scala.collection.immutable.List$.MODULE$.from(
                          scala.Predef$.MODULE$.wrapRefArray((Object[]) partitionColumns)),
                  "createVersion", session.version()
                });
    session.sessionState().catalog().createTable(entry, false, false);
  }

  /**
   * Brings the catalog entry of {@code database.table} in line with its log after the log's
   * schema or partitioning changed (REPLACE, ALTER TABLE, schema evolution): DESCRIBE and
   * {@code spark.catalog} show the entry. {@code schemaJson} as {@link #register} takes it. A
   * Hive metastore keeps an entry's partition columns: only its data columns follow there.
   */
  public static void refresh(
      SparkSession session, String database, String table, String schemaJson,
      String[] partitionColumns) throws Exception {
    org.apache.spark.sql.catalyst.catalog.SessionCatalog catalog =
        session.sessionState().catalog();
    TableIdentifier ident =
        new TableIdentifier(table, Option.apply(database), Option.apply("spark_catalog"));
    CatalogTable entry = catalog.getTableMetadata(ident);
    StructType schema = (StructType) DataType.fromJson(schemaJson);
    Seq partitions =
        scala.collection.immutable.List$.MODULE$.from(
            scala.Predef$.MODULE$.wrapRefArray((Object[]) partitionColumns));
    if (entry.partitionColumnNames().equals(partitions)) {
      java.util.Set partitionSet = new java.util.HashSet(java.util.Arrays.asList(partitionColumns));
      java.util.List data = new java.util.ArrayList();
      org.apache.spark.sql.types.StructField[] fields = schema.fields();
      for (int i = 0; i < fields.length; i++) {
        if (!partitionSet.contains(fields[i].name())) {
          data.add(fields[i]);
        }
      }
      // The external catalog's call, not the session catalog's: that one refuses a schema
      // without some old column, and RENAME/DROP COLUMN leave exactly that.
      catalog.externalCatalog().alterTableDataSchema(
          (String) entry.identifier().database().get(), entry.identifier().table(),
          org.apache.spark.sql.types.DataTypes.createStructType(data));
    } else {
      catalog.alterTable(
          (CatalogTable)
              Products.with(
                  entry, new Object[] {"schema", schema, "partitionColumnNames", partitions}));
    }
    catalog.refreshTable(ident); // plans resolved from now on see the new columns
  }

  /**
   * The session's settings whose keys start with {@code prefix}: key, value, key, value, in
   * one call (the session's table-property defaults), where walking every setting from Python
   * takes a round trip per setting.
   */
  public static String[] settingsWithPrefix(SparkSession session, String prefix) {
    java.util.List found = new java.util.ArrayList();
    Iterator entries = session.sessionState().conf().getAllConfs().iterator();
    while (entries.hasNext()) {
      Tuple2 entry = (Tuple2) entries.next();
      String key = (String) entry._1();
      if (key.startsWith(prefix)) {
        found.add(key);
        found.add((String) entry._2());
      }
    }
    return (String[]) found.toArray(new String[0]);
  }

  /**
   * Makes the entry of {@code database.table} a Delta table's (CONVERT TO DELTA by name): the
   * {@code delta} provider, and the option that lets the source read it with the entry's
   * schema; partitions are the log's now, not the catalog's.
   */
  public static void makeDelta(SparkSession session, String database, String table)
      throws Exception {
    org.apache.spark.sql.catalyst.catalog.SessionCatalog catalog =
        session.sessionState().catalog();
    TableIdentifier ident =
        new TableIdentifier(table, Option.apply(database), Option.apply("spark_catalog"));
    CatalogTable entry = catalog.getTableMetadata(ident);
    CatalogStorageFormat storage = entry.storage();
    catalog.alterTable(
        (CatalogTable)
            Products.with(
                entry,
                new Object[] {
                  "storage",
                  Products.with(
                      storage,
                      new Object[] {
                        "properties", storage.properties().updated(CATALOG_OPTION, "true")
                      }),
                  "provider", Option.apply("delta"),
                  "tracksPartitionsInCatalog", Boolean.FALSE
                }));
    catalog.refreshTable(ident);
  }
}
