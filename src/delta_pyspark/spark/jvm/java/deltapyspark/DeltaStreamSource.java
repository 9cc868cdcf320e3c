package deltapyspark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.streaming.Offset;
import org.apache.spark.sql.execution.streaming.Source;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Map;

/**
 * {@code spark.readStream.format("delta").load(path)}: the Python core decides which files
 * each micro-batch reads and what the offsets are ({@link DeltaTables#streamOffset}); a
 * batch is a native Parquet scan of those files, the same relation a batch read makes
 * (deletion vectors and column mapping included), flagged as streaming.
 */
public final class DeltaStreamSource implements Source, SupportsTriggerAvailableNow {
  static final String START_OPTION = "__delta_stream_start";
  static final String END_OPTION = "__delta_stream_end";
  static final String SCHEMA_OPTION = "__delta_stream_schema";

  private final SQLContext context;
  private final DeltaSource source;
  private final String path;
  private final Map parameters;
  private final StructType schema;
  private final String logSchema; // as the log writes it: later versions are compared to it
  private long endVersion = -1L; // Trigger.AvailableNow: the last version to read

  DeltaStreamSource(
      SQLContext context, DeltaSource source, String path, Map parameters, String[] schemas) {
    this.context = context;
    this.source = source;
    this.path = path;
    this.parameters = parameters;
    this.schema = (StructType) org.apache.spark.sql.types.DataType.fromJson(schemas[0]);
    this.logSchema = schemas[1];
  }

  public StructType schema() {
    return schema;
  }

  public Option getOffset() {
    throw new UnsupportedOperationException("the Delta source is asked for latestOffset");
  }

  /**
   * Not {@code allAvailable}, which is what Trigger.Once asks for: any other limit means the
   * core applies the read's own ({@code maxFilesPerTrigger}, {@code maxBytesPerTrigger}).
   * Made by reflection: Janino compiles no calls of static interface methods.
   */
  public ReadLimit getDefaultReadLimit() {
    try {
      return (ReadLimit)
          ReadLimit.class.getMethod("maxFiles", new Class[] {int.class})
              .invoke(null, new Object[] {Integer.valueOf(1)});
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("ReadLimit.maxFiles is not there: " + e);
    }
  }

  public org.apache.spark.sql.connector.read.streaming.Offset latestOffset(
      org.apache.spark.sql.connector.read.streaming.Offset start, ReadLimit limit) {
    String answer =
        DeltaSource.tables()
            .streamOffset(
                path,
                DeltaSource.encode(parameters),
                logSchema,
                start == null ? "" : start.json(),
                !(limit instanceof ReadAllAvailable),
                endVersion);
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    String offset = answer.substring(1);
    return offset.isEmpty() ? null : new DeltaStreamOffset(offset);
  }

  public void prepareForTriggerAvailableNow() {
    String answer = DeltaSource.tables().latestVersion(path);
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    endVersion = Long.parseLong(answer.substring(1));
  }

  public Dataset getBatch(Option start, Offset end) {
    Map options = (Map) parameters.updated(END_OPTION, end.json());
    options = (Map) options.updated(SCHEMA_OPTION, logSchema);
    if (start.isDefined()) {
      options = (Map) options.updated(START_OPTION, ((Offset) start.get()).json());
    }
    // a Parquet relation, or a change feed's (ChangeFeedRelation)
    BaseRelation relation = source.createRelation(context, options);
    LogicalRelation read =
        new LogicalRelation(
            relation,
            DataTypeUtils.toAttributes(relation.schema()),
            Option.empty(),
            true,
            Option.apply(this));
    return org.apache.spark.sql.classic.Dataset$.MODULE$.ofRows(
        (org.apache.spark.sql.classic.SparkSession) context.sparkSession(), read);
  }

  public void stop() {}

  public String toString() {
    return "DeltaSource[" + path + "]";
  }
}
