package deltapyspark;

import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import scala.collection.immutable.Seq;

/**
 * Spark's Parquet format as {@link DeltaSource}'s relations read it: on a table with row
 * tracking, {@code _metadata} also carries delta-spark's row tracking fields ({@link
 * RowTrackingFields}). The formats for column mapping and deletion vectors extend it.
 */
public class DeltaParquetFormat extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;

  /** The table's row tracking fields; null when row tracking is not enabled. */
  final RowTrackingFields rowTracking;

  DeltaParquetFormat(RowTrackingFields rowTracking) {
    this.rowTracking = rowTracking;
  }

  public Seq metadataSchemaFields() {
    Seq own = super.metadataSchemaFields();
    return rowTracking == null ? own : (Seq) own.appendedAll(rowTracking.fields());
  }

  /** Same class and row tracking fields (subclasses add what else tells them apart). */
  public boolean equals(Object other) {
    if (other == null || other.getClass() != getClass()) {
      return false;
    }
    RowTrackingFields theirs = ((DeltaParquetFormat) other).rowTracking;
    return rowTracking == null ? theirs == null : rowTracking.equals(theirs);
  }

  public int hashCode() {
    return rowTracking == null ? 0 : rowTracking.hashCode();
  }

  public String toString() {
    return rowTracking == null ? "Parquet" : "Parquet with row tracking";
  }
}
