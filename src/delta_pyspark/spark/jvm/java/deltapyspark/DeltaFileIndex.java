package deltapyspark;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.ArrayList;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.DynamicPruningExpression;
import org.apache.spark.sql.catalyst.expressions.EvalMode$;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.InterpretedPredicate;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.Predicate$;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.sql.classic.SparkSession;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * The files of a Delta table, asked from the Python core ({@link DeltaTables}) at every
 * listing: a plan reads the table's snapshot as of when it runs (pinned only by time travel),
 * with the log's stats-based skipping applied to Spark's filters. Partition values come from
 * the log, not from directory names, so any file layout works. Spark does not re-apply
 * partition filters to the rows of a listing, so they are evaluated here, exactly, with
 * Spark's own evaluator; data filters only skip whole files (Spark filters rows after). A file
 * with a deletion vector is listed with its deleted rows in its metadata, for {@link
 * DeletionVectorParquetFormat}'s reader; on a table with row tracking each file also carries
 * its base row id and default row commit version, for {@code _metadata} ({@link
 * RowTrackingFields}).
 */
public final class DeltaFileIndex implements FileIndex {
  private static final String NULL = "\u0001";

  private final String tableId;
  private final Path root;
  private final StructType partitionSchema;
  private final long sizeInBytes;
  /**
   * The relation's own session (a clone of the user's when the relation was made), which Spark
   * reads a scan's settings from: each listing sets in it the split size that packs the listed
   * files into whole waves of tasks (see {@code scan.even_split_bytes}). Its other settings
   * stay as they were when the relation was made: copying the user's later ones at listing
   * time would reach the reader but not what Spark planned before listing (a columnar scan
   * then got rows from a row-based reader).
   */
  private final SparkSession scans;
  /** The user's maximum split size when the relation was made. */
  private final long maxSplitBytes;

  public DeltaFileIndex(
      String tableId, String root, StructType partitionSchema, long sizeInBytes,
      SparkSession scans) {
    this.tableId = tableId;
    this.root = new Path(root);
    this.partitionSchema = partitionSchema;
    this.sizeInBytes = sizeInBytes;
    this.scans = scans;
    this.maxSplitBytes = scans.sessionState().conf().filesMaxPartitionBytes();
  }

  public String tableId() {
    return tableId;
  }

  /** The table's root directory. */
  public String root() {
    return root.toString();
  }

  public Seq rootPaths() {
    ArrayList paths = new ArrayList();
    paths.add(root);
    return CollectionConverters.asScala(paths).toList();
  }

  public Seq listFiles(Seq partitionFilters, Seq dataFilters) {
    SQLConf conf = scans.sessionState().conf();
    String timeZone = conf.sessionLocalTimeZone();
    // the user's aim for the number of tasks (minPartitionNum) is left to Spark
    String packing =
        conf.filesMinPartitionNum().isDefined()
            ? ""
            : maxSplitBytes + "," + conf.filesOpenCostInBytes() + ","
                + scans.leafNodeDefaultParallelism();
    StringBuilder filters = new StringBuilder();
    appendSql(filters, partitionFilters);
    appendSql(filters, dataFilters);
    byte[] answer =
        DeltaSource.tables().listFiles(tableId, filters.toString(), timeZone, packing);
    if (answer.length > 0 && answer[0] == 'E') {
      throw DeltaSource.error(new String(answer, 1, answer.length - 1, StandardCharsets.UTF_8));
    }
    String split = next(answer, 1);
    if (split.length() > 0) {
      conf.setConfString(SQLConf.FILES_MAX_PARTITION_BYTES().key(), split);
    } else {
      conf.setConfString(SQLConf.FILES_MAX_PARTITION_BYTES().key(), Long.toString(maxSplitBytes));
    }
    String rowTracking = next(answer, 2 + split.length());
    ArrayList directories =
        parse(answer, 3 + split.length() + rowTracking.length(), rowTracking.length() > 0,
            timeZone);
    InterpretedPredicate keep = partitionPredicate(partitionFilters);
    ArrayList kept = new ArrayList();
    for (int i = 0; i < directories.size(); i++) {
      PartitionDirectory directory = (PartitionDirectory) directories.get(i);
      if (keep == null || keep.eval(directory.values())) {
        kept.add(directory);
      }
    }
    return CollectionConverters.asScala(kept).toList();
  }

  /** Each filter's SQL text for the Python core's skipping (those without one are left out). */
  private static void appendSql(StringBuilder out, Seq filters) {
    Iterator it = filters.iterator();
    while (it.hasNext()) {
      Expression filter = (Expression) it.next();
      if (filter instanceof DynamicPruningExpression) {
        continue; // Spark prunes with these itself, after the listing
      }
      String sql;
      try {
        sql = unqualified(filter).sql();
      } catch (RuntimeException e) {
        continue;
      }
      if (out.length() > 0) {
        out.append('\0');
      }
      out.append(sql);
    }
  }

  /** {@code filter} with column names alone: a view's filter names {@code view.column}. */
  private static Expression unqualified(Expression filter) {
    return (Expression)
        filter.transform(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return node instanceof AttributeReference;
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (!(node instanceof AttributeReference)) {
                  return fallback.apply(node);
                }
                return ((AttributeReference) node).withQualifier(emptySeq());
              }
            });
  }

  /** The Python core's listing as partition directories of files, partition values typed. */
  private ArrayList parse(byte[] answer, int start, boolean rowTracking, String timeZone) {
    StructField[] fields = partitionSchema.fields();
    ArrayList directories = new ArrayList();
    ArrayList files = null;
    String[] current = null;
    int pos = start;
    while (pos < answer.length) {
      String path = next(answer, pos);
      pos += utf8Length(path) + 1;
      String size = next(answer, pos);
      pos += size.length() + 1;
      String mtime = next(answer, pos);
      pos += mtime.length() + 1;
      String vector = next(answer, pos);
      pos += vector.length() + 1;
      String baseRowId = null;
      String defaultVersion = null;
      if (rowTracking) {
        baseRowId = next(answer, pos);
        pos += baseRowId.length() + 1;
        defaultVersion = next(answer, pos);
        pos += defaultVersion.length() + 1;
      }
      String[] values = new String[fields.length];
      for (int i = 0; i < fields.length; i++) {
        values[i] = next(answer, pos);
        pos += utf8Length(values[i]) + 1;
      }
      if (current == null || !java.util.Arrays.equals(current, values)) {
        if (current != null) {
          directories.add(directory(current, files, fields, timeZone));
        }
        current = values;
        files = new ArrayList();
      }
      FileStatus status =
          new FileStatus(
              Long.parseLong(size), false, 0, 0, Long.parseLong(mtime), new Path(path));
      scala.collection.immutable.Map metadata = scala.collection.immutable.Map$.MODULE$.empty();
      if (vector.length() > 0) {
        metadata =
            (scala.collection.immutable.Map)
                metadata.updated(DeletionVectorReader.DELETED_ROWS, deletedRows(vector));
      }
      // read by Spark's default extractor of constant metadata fields
      if (baseRowId != null && baseRowId.length() > 0) {
        metadata =
            (scala.collection.immutable.Map)
                metadata.updated(RowTrackingFields.BASE_ROW_ID, Long.valueOf(baseRowId));
      }
      if (defaultVersion != null && defaultVersion.length() > 0) {
        metadata =
            (scala.collection.immutable.Map)
                metadata.updated(
                    RowTrackingFields.DEFAULT_ROW_COMMIT_VERSION, Long.valueOf(defaultVersion));
      }
      files.add(new FileStatusWithMetadata(status, metadata));
    }
    if (current != null) {
      directories.add(directory(current, files, fields, timeZone));
    }
    return directories;
  }

  /** A file's deleted rows, ascending, from its base64 portable 64-bit roaring bitmap. */
  private static long[] deletedRows(String vector) {
    ByteBuffer bitmap =
        ByteBuffer.wrap(Base64.getDecoder().decode(vector)).order(ByteOrder.LITTLE_ENDIAN);
    try {
      return DeletedRows.positions(bitmap);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("a deletion vector the Python core sent is corrupt", e);
    }
  }

  private static String next(byte[] bytes, int start) {
    int end = start;
    while (bytes[end] != 0) {
      end++;
    }
    return new String(bytes, start, end - start, StandardCharsets.UTF_8);
  }

  private static int utf8Length(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }

  private static PartitionDirectory directory(
      String[] values, ArrayList files, StructField[] fields, String timeZone) {
    Object[] typed = new Object[values.length];
    for (int i = 0; i < values.length; i++) {
      typed[i] = typed(values[i], fields[i].dataType(), timeZone);
    }
    return new PartitionDirectory(
        new GenericInternalRow(typed), CollectionConverters.asScala(files).toList());
  }

  /** A partition value as the log spells it, in Spark's internal form for its type. */
  private static Object typed(String value, DataType type, String timeZone) {
    if (NULL.equals(value)) {
      return null;
    }
    UTF8String text = UTF8String.fromString(value);
    if (type instanceof StringType) {
      return text;
    }
    Cast cast =
        new Cast(
            Literal$.MODULE$.apply(text), type, Option.apply(timeZone), EvalMode$.MODULE$.LEGACY());
    return cast.eval(null);
  }

  /** The conjunction of the partition filters, bound to the partition values' positions. */
  private InterpretedPredicate partitionPredicate(Seq partitionFilters) {
    Expression all = null;
    Iterator it = partitionFilters.iterator();
    while (it.hasNext()) {
      Expression filter = (Expression) it.next();
      if (filter instanceof DynamicPruningExpression) {
        continue;
      }
      all = all == null ? filter : new org.apache.spark.sql.catalyst.expressions.And(all, filter);
    }
    if (all == null) {
      return null;
    }
    final StructField[] fields = partitionSchema.fields();
    Expression bound = (Expression)
        all.transform(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return node instanceof AttributeReference;
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (!(node instanceof AttributeReference)) {
                  return fallback.apply(node);
                }
                String name = ((AttributeReference) node).name();
                for (int i = 0; i < fields.length; i++) {
                  if (fields[i].name().equalsIgnoreCase(name)) {
                    return new BoundReference(i, fields[i].dataType(), true);
                  }
                }
                throw new IllegalStateException("not a partition column: " + name);
              }
            });
    return Predicate$.MODULE$.createInterpreted(bound);
  }

  public String[] inputFiles() {
    Seq directories = listFiles(emptySeq(), emptySeq());
    ArrayList paths = new ArrayList();
    Iterator it = directories.iterator();
    while (it.hasNext()) {
      Iterator files = ((PartitionDirectory) it.next()).files().iterator();
      while (files.hasNext()) {
        paths.add(((FileStatusWithMetadata) files.next()).getPath().toString());
      }
    }
    return (String[]) paths.toArray(new String[0]);
  }

  static Seq emptySeq() {
    return CollectionConverters.asScala(new ArrayList()).toList();
  }

  /** Every listing asks for the current snapshot: nothing is cached here. */
  public void refresh() {}

  /** The table's size when the relation was made: only a statistic for planning. */
  public long sizeInBytes() {
    return sizeInBytes;
  }

  public StructType partitionSchema() {
    return partitionSchema;
  }

  public String toString() {
    return "DeltaFileIndex(" + root + ")";
  }
}
