package deltapyspark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.execution.datasources.FileFormat$;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.broadcast.Broadcast;
import scala.Function1;
import scala.reflect.ClassTag$;

/**
 * Spark's Parquet format, reading files without the rows their deletion vectors mark.
 *
 * <p>Its reader ({@link DeletionVectorReader}) knows each row's index in its file, by counting
 * when a whole file is read without pushed filters, else from Spark's reserved
 * {@code _tmp_metadata_row_index} field, and removes the marked rows from each batch in place.
 * Spark's generated code, filters and row-group pushdown work as for plain Parquet. A per-row
 * filter above the scan cost 1.5-2x a plain read; this costs a binary search per batch and
 * moving the live rows of batches that lost some.
 *
 * <p>Compiled with Janino (bundled with Spark) when the session is configured, so only plain
 * Java 1.7 syntax: no generics, lambdas or diamonds.
 */
public final class DeletionVectorParquetFormat extends DeltaParquetFormat {
  private static final long serialVersionUID = 1L;

  static final String DELETED_ROWS_OPTION = "__delta_pyspark_deleted_rows";

  /** The scan's deleted rows by file; null when each file carries its own (see below). */
  private final DeletedRows deleted;

  /** The table's physical column names when it uses column mapping, else null. */
  private final PhysicalSchema names;

  public DeletionVectorParquetFormat(DeletedRows deleted) {
    this(deleted, null, null);
  }

  private DeletionVectorParquetFormat(
      DeletedRows deleted, PhysicalSchema names, RowTrackingFields rowTracking) {
    super(rowTracking);
    this.deleted = deleted;
    this.names = names;
  }

  /**
   * The format of {@link DeltaSource}'s relations over tables with deletion vectors: the file
   * index lists each file with its deleted rows (Spark hands a listing's file metadata to the
   * reader with each split, {@link DeletionVectorReader#DELETED_ROWS}), since the vectors of a
   * scan are only known when its files are listed, after this format was made.
   */
  DeletionVectorParquetFormat(PhysicalSchema names, RowTrackingFields rowTracking) {
    this(null, names, rowTracking);
  }

  /**
   * {@code parquetScan} (an unchanged {@code spark.read.parquet(...)}) reading its files with
   * this format, so the rows {@code deleted} marks are gone.
   */
  public static Dataset scan(Dataset parquetScan, DeletedRows deleted) {
    return FileScans.withFormat(
        parquetScan,
        new DeletionVectorParquetFormat(deleted),
        DELETED_ROWS_OPTION,
        deleted.toString() + "#" + deleted.hashCode());
  }

  public Function1 buildReaderWithPartitionValues(
      SparkSession session,
      StructType dataSchema,
      StructType partitionSchema,
      StructType requiredSchema,
      scala.collection.immutable.Seq filters,
      scala.collection.immutable.Map options,
      org.apache.hadoop.conf.Configuration hadoopConf) {
    if (names != null) { // physical names; filters name logical columns: Spark applies them above
      dataSchema = names.toPhysical(dataSchema);
      requiredSchema = names.toPhysical(requiredSchema);
      filters = (scala.collection.immutable.Seq) filters.take(0);
    }
    String name = ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME();
    boolean asked = requiredSchema.getFieldIndex(name).isDefined();
    // Nullable, as Spark's reader requires of a field that no file holds
    StructType read = asked ? requiredSchema : requiredSchema.add(name, DataTypes.LongType, true);
    // Each reader gets its own copy of the conf: Spark's sets the read schema in it
    Function1 indexed =
        super.buildReaderWithPartitionValues(
            session, dataSchema, partitionSchema, read, filters, options,
            new org.apache.hadoop.conf.Configuration(hadoopConf));
    // Without pushed filters a whole file's rows come in order from row 0, so counting them
    // gives their indexes: Spark fills its row index field boxing every value. Asked-for
    // indexes are added to batches only, so rows keep Spark's. The IS NOT NULL filters Spark
    // infers for join keys are not pushed to the counting reader (they could only skip
    // all-null row groups, and Spark's filter above the scan still applies them).
    scala.Option batches = options.get(FileFormat$.MODULE$.OPTION_RETURNING_BATCH());
    boolean countable =
        onlyNotNull(filters) && (!asked || batches.isDefined() && "true".equals(batches.get()));
    Function1 counted =
        countable
            ? super.buildReaderWithPartitionValues(
                session, dataSchema, partitionSchema, without(requiredSchema, name),
                (scala.collection.immutable.Seq) filters.take(0), options, new org.apache.hadoop.conf.Configuration(hadoopConf))
            : null;
    StructType rows = read;
    for (int i = 0; i < partitionSchema.fields().length; i++) {
      rows = rows.add(partitionSchema.fields()[i]);
    }
    // Broadcast: sent to each executor once, not with every task
    Broadcast shared =
        deleted == null
            ? null
            : session.sparkContext().broadcast(deleted, ClassTag$.MODULE$.apply(DeletedRows.class));
    return new DeletionVectorReader(
        indexed, counted, shared, rows, read.fieldIndex(name), !asked);
  }

  private static boolean onlyNotNull(scala.collection.immutable.Seq filters) {
    scala.collection.Iterator all = filters.iterator();
    while (all.hasNext()) {
      if (!(all.next() instanceof org.apache.spark.sql.sources.IsNotNull)) {
        return false;
      }
    }
    return true;
  }

  private static StructType without(StructType schema, String name) {
    StructType out = new StructType();
    for (int i = 0; i < schema.fields().length; i++) {
      if (!schema.fields()[i].name().equals(name)) {
        out = out.add(schema.fields()[i]);
      }
    }
    return out;
  }

  public boolean equals(Object other) {
    if (!super.equals(other)) {
      return false;
    }
    DeletionVectorParquetFormat format = (DeletionVectorParquetFormat) other;
    return (deleted == null ? format.deleted == null : deleted.equals(format.deleted))
        && (names == null ? format.names == null : names.equals(format.names));
  }

  public int hashCode() {
    return (deleted == null ? 0 : deleted.hashCode()) * 31 + super.hashCode();
  }

  public String toString() {
    return "Parquet with "
        + (deleted == null ? "deletion vectors" : deleted.toString())
        + (rowTracking == null ? "" : " and row tracking");
  }
}
