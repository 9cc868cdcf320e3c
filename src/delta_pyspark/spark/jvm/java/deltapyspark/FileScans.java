package deltapyspark;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation$;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Parquet scans of files the log lists, and copies of such a scan with another relation.
 *
 * <p>Spark packs a scan's files into tasks of at most {@code spark.sql.files.maxPartitionBytes}
 * read from the relation's session: 307 MB of files on 2 cores became 3 tasks (two waves, the
 * second half idle), and a copy of them took 2.6 s against 1.9 s as 4 even tasks. The tuned
 * copy carries a clone of the session with a smaller maximum, so the user's session and its
 * settings are left alone.
 */
public final class FileScans {
  private FileScans() {}

  /**
   * A Parquet scan of exactly the files {@code paths} (absolute, not URI-encoded, each ended
   * by a NUL), with the sizes and modification times the log gives them ({@code
   * sizesAndTimes}: two little-endian longs per file), read with {@code schema} (JSON: the data
   * columns, then the partition columns discovered from the paths under {@code basePath}, if
   * not null). Spark's {@code spark.read.parquet(paths)} reads each path as a glob pattern and
   * checks and lists each one on storage before planning (40-60 ms for 48 local files); here
   * the listing is what the log says.
   */
  public static Dataset parquet(
      SparkSession session, String paths, byte[] sizesAndTimes, String schemaJson,
      String basePath) throws java.io.IOException {
    StructType schema = (StructType) DataType.fromJson(schemaJson);
    ByteBuffer numbers = ByteBuffer.wrap(sizesAndTimes).order(ByteOrder.LITTLE_ENDIAN);
    Listed listed = new Listed();
    ArrayList roots = new ArrayList();
    FileSystem fs = null;
    int start = 0;
    for (int end = paths.indexOf('\0'); end >= 0; end = paths.indexOf('\0', start)) {
      Path path = new Path(paths.substring(start, end));
      start = end + 1;
      if (fs == null) {
        fs = path.getFileSystem(session.sessionState().newHadoopConf());
      }
      path = fs.makeQualified(path);
      long size = numbers.getLong();
      long modified = numbers.getLong();
      listed.putLeafFiles(
          path, new FileStatus[] {new FileStatus(size, false, 1, size, modified, path)});
      roots.add(path);
    }
    scala.collection.immutable.Map options = scala.collection.immutable.Map$.MODULE$.empty();
    if (basePath != null) {
      options = (scala.collection.immutable.Map) options.updated("basePath", basePath);
    }
    InMemoryFileIndex index =
        new InMemoryFileIndex(
            session, CollectionConverters.asScala(roots).toList(), options, Option.apply(schema),
            listed, Option.empty(), Option.empty());
    StructType partitions = index.partitionSchema();
    ArrayList data = new ArrayList();
    StructField[] fields = schema.fields();
    for (int i = 0; i < fields.length; i++) {
      if (!partitions.getFieldIndex(fields[i].name()).isDefined()) {
        data.add(fields[i]);
      }
    }
    HadoopFsRelation relation =
        new HadoopFsRelation(
            index, partitions, new StructType((StructField[]) data.toArray(new StructField[0])),
            Option.empty(), new ParquetFileFormat(), options, session);
    return Dataset.ofRows(session, LogicalRelation$.MODULE$.apply(relation, false));
  }

  /** The listing of a scan: each file's status under its own path, nothing asked of storage. */
  static final class Listed extends FileStatusCache {
    private final java.util.HashMap files = new java.util.HashMap();

    public Option getLeafFiles(Path path) {
      return Option.apply(files.get(path));
    }

    public void putLeafFiles(Path path, FileStatus[] leafFiles) {
      files.put(path, leafFiles);
    }

    public void invalidateAll() {
      files.clear();
    }
  }

  /** The relation of {@code scan}, which must be an unchanged file scan. */
  static LogicalRelation relationOf(Dataset scan) {
    LogicalPlan plan = scan.queryExecution().analyzed();
    if (!(plan instanceof LogicalRelation)
        || !(((LogicalRelation) plan).relation() instanceof HadoopFsRelation)) {
      throw new IllegalArgumentException("not a plain file scan: " + plan);
    }
    return (LogicalRelation) plan;
  }

  /** {@code scan} reading {@code files} (its relation, changed) instead. */
  static Dataset withRelation(Dataset scan, HadoopFsRelation files) {
    LogicalRelation relation = relationOf(scan);
    LogicalPlan swapped =
        relation.copy(
            files, relation.output(), relation.catalogTable(), relation.isStreaming(),
            relation.stream());
    return Dataset.ofRows((SparkSession) scan.sparkSession(), swapped);
  }

  /**
   * {@code scan} reading its files with {@code format}, a subclass of Spark's Parquet format,
   * and option {@code key} set to {@code value}. Spark's ParquetFileFormat equals any
   * subclass: the option keeps a cached plain scan of the same files from answering for this
   * one (and the reverse).
   */
  static Dataset withFormat(Dataset scan, ParquetFileFormat format, String key, String value) {
    HadoopFsRelation files = (HadoopFsRelation) relationOf(scan).relation();
    scala.collection.immutable.Map options =
        (scala.collection.immutable.Map) files.options().updated(key, value);
    return withRelation(
        scan,
        files.copy(
            files.location(), files.partitionSchema(), files.dataSchema(), files.bucketSpec(),
            format, options, files.sparkSession()));
  }

  /** {@code scan} with its files packed into tasks of at most {@code maxSplitBytes}. */
  public static Dataset withMaxSplitBytes(Dataset scan, long maxSplitBytes) {
    return withConf(
        scan, SQLConf.FILES_MAX_PARTITION_BYTES().key(), Long.toString(maxSplitBytes));
  }

  /**
   * {@code scan} planned and read with one SQL conf changed in its own session (a clone of
   * the relation's): the user's session is untouched.
   */
  public static Dataset withConf(Dataset scan, String key, String value) {
    HadoopFsRelation files = (HadoopFsRelation) relationOf(scan).relation();
    SparkSession tuned = ((SparkSession) files.sparkSession()).cloneSession();
    tuned.sessionState().conf().setConfString(key, value);
    return withRelation(
        scan,
        files.copy(
            files.location(), files.partitionSchema(), files.dataSchema(), files.bucketSpec(),
            files.fileFormat(), files.options(), tuned));
  }
}
