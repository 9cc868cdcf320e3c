package deltapyspark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;
import scala.Function1;

/**
 * Spark's Parquet format over a table with column mapping: asks the files for the physical
 * names of the columns Spark wants (see {@link PhysicalSchema}). Filters are not pushed into
 * the Parquet reader (they name logical columns); Spark applies them above the scan, and the
 * log's statistics have already skipped whole files.
 */
public final class ColumnMappedParquetFormat extends DeltaParquetFormat {
  private static final long serialVersionUID = 1L;

  private final PhysicalSchema names;

  ColumnMappedParquetFormat(PhysicalSchema names, RowTrackingFields rowTracking) {
    super(rowTracking);
    this.names = names;
  }

  public Function1 buildReaderWithPartitionValues(
      SparkSession session,
      StructType dataSchema,
      StructType partitionSchema,
      StructType requiredSchema,
      scala.collection.immutable.Seq filters,
      scala.collection.immutable.Map options,
      org.apache.hadoop.conf.Configuration hadoopConf) {
    return super.buildReaderWithPartitionValues(
        session,
        names.toPhysical(dataSchema),
        partitionSchema,
        names.toPhysical(requiredSchema),
        (scala.collection.immutable.Seq) filters.take(0),
        options,
        hadoopConf);
  }

  public boolean equals(Object other) {
    return super.equals(other) && names.equals(((ColumnMappedParquetFormat) other).names);
  }

  public int hashCode() {
    return names.hashCode() * 31 + super.hashCode();
  }

  public String toString() {
    return "Parquet with column mapping" + (rowTracking == null ? "" : " and row tracking");
  }
}
