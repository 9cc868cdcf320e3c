package deltapyspark;

import org.apache.hadoop.mapreduce.Job;
import org.apache.spark.QueryContext;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.RelationProvider;
import org.apache.spark.sql.sources.SchemaRelationProvider;
import org.apache.spark.sql.sources.StreamSinkProvider;
import org.apache.spark.sql.sources.StreamSourceProvider;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import scala.Option;
import scala.Tuple2;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;

/**
 * The {@code delta} data source Spark resolves itself ({@code format("delta")}, {@code
 * delta.`path`} in SQL): a Parquet {@link HadoopFsRelation} whose files a {@link
 * DeltaFileIndex} asks from the Python core, so Spark's planner prunes partitions, pushes
 * filters, prunes dynamically and splits files as for any file source.
 *
 * <p>It is also a {@link FileFormat} only because Spark runs SQL on a path ({@code
 * delta.`path`}) for file formats alone; it never reads or writes files as one. Writes go
 * through the Python core's write command and transaction: {@link #createRelation(SQLContext,
 * SaveMode, Map, Dataset)} for {@code save}/CTAS, {@link DeltaInsert} for SQL inserts.
 */
public final class DeltaSource
    implements DataSourceRegister,
        RelationProvider,
        SchemaRelationProvider,
        CreatableRelationProvider,
        StreamSourceProvider,
        StreamSinkProvider,
        FileFormat {
  static final String EXTENSIONS = "deltapyspark.DeltaSparkExtensions";

  private static volatile DeltaTables tables;

  /** Called by the Python core when a session is set up (Spark instantiates sources itself). */
  public static void register(DeltaTables pythonTables) {
    tables = pythonTables;
  }

  static DeltaTables tables() {
    DeltaTables registered = tables;
    if (registered == null) {
      throw error(
          "Delta tables are read through delta-pyspark's Python core, which this JVM has not "
              + "registered: build the session with "
              + "delta_pyspark.configure_spark_with_delta(builder).getOrCreate()");
    }
    return registered;
  }

  /**
   * The error condition a Python error's answer names ({@code Type: [CONDITION] text}): the
   * exception carries it as its condition, which Spark Connect sends to its clients.
   */
  private static final java.util.regex.Pattern CONDITION =
      java.util.regex.Pattern.compile("\\w+: \\[([A-Z][A-Z0-9_]*(?:\\.[A-Z0-9_]+)*)\\]");

  /** A Python answer's failure token ({@code [delta-pyspark failure HEX]}). */
  private static final java.util.regex.Pattern TOKEN =
      java.util.regex.Pattern.compile("\\[delta-pyspark failure ([0-9a-f]+)\\]");

  /** JVM errors Python answers passed on, by token: thrown again as they were. */
  private static final java.util.Map PASSED_ON =
      java.util.Collections.synchronizedMap(new java.util.HashMap());

  /**
   * Called by Python when its answer's error is a JVM error PySpark converted (Spark's parser
   * refusing a type, ...): {@link #error} throws that error itself, so JVM callers and Spark
   * Connect clients get its class and condition (a {@code ParseException} stays one).
   */
  public static void passOn(String token, Throwable failure) {
    if (PASSED_ON.size() > 64) { // answers not thrown (none expected): kept bounded
      PASSED_ON.clear();
    }
    PASSED_ON.put(token, failure);
  }

  /**
   * Throws an {@link AnalysisException} (what PySpark raises as its own) carrying {@code
   * message}, or the JVM error a Python answer passed on ({@link #passOn}). It is a checked exception in Java, unchecked in the Scala interfaces implemented
   * here, hence thrown through {@code Platform}; declared to return one so call sites read
   * {@code throw error(...)}.
   */
  static RuntimeException error(String message) {
    java.util.regex.Matcher token = TOKEN.matcher(message);
    Object passed = token.find() ? PASSED_ON.remove(token.group(1)) : null;
    if (passed != null) {
      Platform.throwException((Throwable) passed);
    }
    java.util.regex.Matcher condition = CONDITION.matcher(message);
    Platform.throwException(
        new AnalysisException(
            message,
            Option.empty(),
            Option.empty(),
            Option.empty(),
            condition.lookingAt() ? Option.apply(condition.group(1)) : Option.empty(),
            scala.collection.immutable.Map$.MODULE$.empty(),
            new QueryContext[0]));
    return new IllegalStateException(message);
  }

  public String shortName() {
    return "delta";
  }

  /**
   * The column types a write may carry: Spark's default for this interface plus {@code
   * VARIANT}, which Delta stores (the {@code variantType} feature) and Spark's Parquet writer
   * writes; intervals are still refused, as Delta has no type for them.
   */
  public boolean supportsDataType(DataType type) {
    if (type instanceof org.apache.spark.sql.types.ArrayType) {
      return supportsDataType(((org.apache.spark.sql.types.ArrayType) type).elementType());
    }
    if (type instanceof org.apache.spark.sql.types.MapType) {
      org.apache.spark.sql.types.MapType map = (org.apache.spark.sql.types.MapType) type;
      return supportsDataType(map.keyType()) && supportsDataType(map.valueType());
    }
    if (type instanceof StructType) {
      org.apache.spark.sql.types.StructField[] fields = ((StructType) type).fields();
      for (int i = 0; i < fields.length; i++) {
        if (!supportsDataType(fields[i].dataType())) {
          return false;
        }
      }
      return true;
    }
    if (type instanceof org.apache.spark.sql.types.UserDefinedType) {
      return supportsDataType(((org.apache.spark.sql.types.UserDefinedType) type).sqlType());
    }
    return !(type instanceof org.apache.spark.sql.types.CalendarIntervalType
        || type instanceof org.apache.spark.sql.types.DayTimeIntervalType
        || type instanceof org.apache.spark.sql.types.YearMonthIntervalType);
  }

  public BaseRelation createRelation(SQLContext context, Map parameters) {
    SparkSession session = context.sparkSession();
    String extensions = session.sparkContext().conf().get("spark.sql.extensions", "");
    if (!extensions.contains(EXTENSIONS)) {
      throw error(
          "this SparkSession lacks delta-pyspark's session extension (" + EXTENSIONS
              + "), which keeps SQL writes off Delta tables: build the session with "
              + "delta_pyspark.configure_spark_with_delta(builder).getOrCreate()");
    }
    Option path = parameters.get("path");
    if (path.isEmpty()) {
      throw error("reading a Delta table needs a path");
    }
    String timeZone = session.sessionState().conf().sessionLocalTimeZone();
    if (ChangeFeedRelation.asked(parameters)) {
      Object changes =
          tables().changes(session, (String) path.get(), encode(parameters), timeZone);
      if (changes instanceof String) {
        throw error(((String) changes).substring(1));
      }
      return new ChangeFeedRelation(
          context, (org.apache.spark.sql.classic.Dataset) changes, (String) path.get());
    }
    String answer = tables().open((String) path.get(), encode(parameters), timeZone);
    if (answer.startsWith("E")) {
      throw error(answer.substring(1));
    }
    String[] parts = answer.substring(1).split("\0", -1);
    StructType schema = (StructType) DataType.fromJson(parts[2]);
    StructType partitionSchema = (StructType) DataType.fromJson(parts[3]);
    org.apache.spark.sql.classic.SparkSession user =
        (org.apache.spark.sql.classic.SparkSession) session;
    org.apache.spark.sql.classic.SparkSession scans = user.cloneSession();
    if (parts.length > 7 && "rows".equals(parts[7])) {
      // integers widened to decimals: only Spark's row-based Parquet reader converts them
      scans.sessionState().conf().setConfString("spark.sql.parquet.enableVectorizedReader", "false");
    }
    DeltaFileIndex index =
        new DeltaFileIndex(parts[0], parts[1], partitionSchema, Long.parseLong(parts[4]), scans);
    // the table can hold deletion vectors: its files' rows come with each listing
    PhysicalSchema names =
        parts[6].isEmpty()
            ? null
            : new PhysicalSchema(schema, (StructType) DataType.fromJson(parts[6]));
    RowTrackingFields rowTracking =
        parts.length > 9 && !parts[8].isEmpty() ? new RowTrackingFields(parts[8], parts[9]) : null;
    ParquetFileFormat format =
        "dv".equals(parts[5])
            ? new DeletionVectorParquetFormat(names, rowTracking)
            : names != null
                ? new ColumnMappedParquetFormat(names, rowTracking)
                : rowTracking != null ? new DeltaParquetFormat(rowTracking) : new ParquetFileFormat();
    return new HadoopFsRelation(
        index, partitionSchema, schema, Option.empty(), format, parameters, scans);
  }

  /**
   * A relation given a schema: a catalog table's (its entry carries {@link
   * DeltaWrites#CATALOG_OPTION}), which the log's overrides, so a schema evolved since the
   * catalog entry was written (or kept in Spark's order, partition columns last) reads as the
   * table is now; else the user's ({@code spark.read.schema(...)}), which is refused, as
   * delta-spark refuses it.
   */
  public BaseRelation createRelation(SQLContext context, Map parameters, StructType schema) {
    if (!parameters.contains(DeltaWrites.CATALOG_OPTION)) {
      throw error(
          "Delta tables take their schema from the transaction log: reading one with a "
              + "user-specified schema is not supported (remove .schema(...))");
    }
    return createRelation(context, parameters);
  }

  /** {@code options} as {@code key NUL value NUL ...}, with the keys as the user spelt them. */
  static String encode(Map options) {
    if (options instanceof org.apache.spark.sql.catalyst.util.CaseInsensitiveMap) {
      options = ((org.apache.spark.sql.catalyst.util.CaseInsensitiveMap) options).originalMap();
    }
    StringBuilder out = new StringBuilder();
    Iterator it = options.iterator();
    while (it.hasNext()) {
      Tuple2 option = (Tuple2) it.next();
      out.append((String) option._1()).append('\0').append((String) option._2()).append('\0');
    }
    return out.toString();
  }

  /**
   * {@code df.write.format("delta").save(path)}, {@code saveAsTable} and {@code CREATE TABLE
   * ... USING delta AS SELECT} from any language: one transaction of the Python core.
   */
  public BaseRelation createRelation(
      SQLContext context, SaveMode mode, Map parameters, Dataset data) {
    Option path = parameters.get("path");
    String answer =
        tables()
            .write(
                context.sparkSession(),
                path.isEmpty() ? "" : (String) path.get(),
                mode.name().toLowerCase(java.util.Locale.ROOT),
                encode(parameters),
                data);
    if (answer.startsWith("E")) {
      throw error(answer.substring(1));
    }
    return createRelation(context, parameters);
  }

  public Tuple2 sourceSchema(
      SQLContext context, Option schema, String providerName, Map parameters) {
    return new Tuple2(shortName(), DataType.fromJson(streamSchemas(schema, parameters)[0]));
  }

  public org.apache.spark.sql.execution.streaming.Source createSource(
      SQLContext context, String metadataPath, Option schema, String providerName,
      Map parameters) {
    String path = streamPath(parameters);
    Option start = parameters.get("startingVersion");
    if (start.isDefined() && "latest".equalsIgnoreCase(((String) start.get()).trim())) {
      // fixed once: the stream starts after the version that is latest now
      String answer = tables().latestVersion(path);
      if (answer.startsWith("E")) {
        throw error(answer.substring(1));
      }
      long next = Long.parseLong(answer.substring(1)) + 1;
      parameters = (Map) parameters.updated("startingVersion", String.valueOf(next));
    }
    return new DeltaStreamSource(
        context, this, path, parameters, streamSchemas(schema, parameters));
  }

  /** The stream's schema as Spark's JSON and as the log's schema string. */
  private static String[] streamSchemas(Option schema, Map parameters) {
    if (schema.isDefined() && !parameters.contains(DeltaWrites.CATALOG_OPTION)) {
      throw error(
          "Delta tables take their schema from the transaction log: reading one with a "
              + "user-specified schema is not supported (remove .schema(...))");
    }
    String answer = tables().streamSchema(streamPath(parameters), encode(parameters));
    if (answer.startsWith("E")) {
      throw error(answer.substring(1));
    }
    return answer.substring(1).split("\0", -1);
  }

  private static String streamPath(Map parameters) {
    Option path = parameters.get("path");
    if (path.isEmpty()) {
      throw error("a streaming read or write of a Delta table needs a path");
    }
    return (String) path.get();
  }

  public org.apache.spark.sql.execution.streaming.Sink createSink(
      SQLContext context, Map parameters, Seq partitionColumns, OutputMode outputMode) {
    Map options = parameters;
    if (partitionColumns.nonEmpty()) {
      StringBuilder json = new StringBuilder("[");
      Iterator it = partitionColumns.iterator();
      while (it.hasNext()) {
        String column = (String) it.next();
        json.append('"').append(column.replace("\\", "\\\\").replace("\"", "\\\""))
            .append('"');
        if (it.hasNext()) {
          json.append(',');
        }
      }
      options = (Map) options.updated("__partition_columns", json.append(']').toString());
    }
    return new DeltaStreamSink(
        streamPath(parameters),
        outputMode.toString().toLowerCase(java.util.Locale.ROOT),
        encode(options));
  }

  static RuntimeException writeRefused() {
    return error(
        "this write into a Delta table would bypass its transaction log (Spark planned it as "
            + "a plain Parquet write): use INSERT INTO/OVERWRITE, df.write.format(\"delta\") "
            + "or DeltaTable's methods");
  }

  public Option inferSchema(SparkSession session, Map options, Seq files) {
    throw error("the delta source resolves its schema from the table's log, not from files");
  }

  public OutputWriterFactory prepareWrite(
      SparkSession session, Job job, Map options, StructType dataSchema) {
    throw writeRefused();
  }

  /**
   * The ids of the Delta tables the scans of {@code data}'s physical plan read, each scan's
   * files listed by then (the listing is what reports the files it kept, see {@code planner}).
   */
  public static String[] listedTablesOf(org.apache.spark.sql.classic.Dataset data) {
    java.util.ArrayList ids = new java.util.ArrayList();
    java.util.ArrayList todo = new java.util.ArrayList();
    todo.add(data.queryExecution().executedPlan());
    while (!todo.isEmpty()) {
      SparkPlan node = (SparkPlan) todo.remove(todo.size() - 1);
      if (node instanceof AdaptiveSparkPlanExec) {
        todo.add(((AdaptiveSparkPlanExec) node).executedPlan());
      } else if (node instanceof QueryStageExec) {
        todo.add(((QueryStageExec) node).plan());
      } else if (node instanceof FileSourceScanExec) {
        FileSourceScanExec scan = (FileSourceScanExec) node;
        if (scan.relation().location() instanceof DeltaFileIndex) {
          scan.selectedPartitions();
          ids.add(((DeltaFileIndex) scan.relation().location()).tableId());
        }
      }
      Iterator children = node.children().iterator();
      while (children.hasNext()) {
        todo.add(children.next());
      }
    }
    return (String[]) ids.toArray(new String[0]);
  }

  public String toString() {
    return "delta";
  }
}
