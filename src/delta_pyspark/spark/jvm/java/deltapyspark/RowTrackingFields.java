package deltapyspark;

import java.util.ArrayList;
import org.apache.spark.sql.catalyst.expressions.FileSourceConstantMetadataStructField$;
import org.apache.spark.sql.catalyst.expressions.FileSourceGeneratedMetadataStructField$;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The {@code _metadata} fields of a table with row tracking, named as delta-spark names them:
 * {@code row_id} and {@code row_commit_version} read the materialized columns of the file
 * (generated fields whose internal names are those columns, null where a file has none), and
 * {@code base_row_id} and {@code default_row_commit_version} are the file's constants from its
 * {@code add} (the listing puts them in each file's metadata, {@link DeltaFileIndex}). {@link
 * RowTrackingIds} turns the first two into the stable values.
 */
final class RowTrackingFields implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  static final String ROW_ID = "row_id";
  static final String BASE_ROW_ID = "base_row_id";
  static final String DEFAULT_ROW_COMMIT_VERSION = "default_row_commit_version";
  static final String ROW_COMMIT_VERSION = "row_commit_version";

  /** The materialized columns (delta.rowTracking.materialized*ColumnName). */
  private final String idColumn;
  private final String versionColumn;

  RowTrackingFields(String idColumn, String versionColumn) {
    this.idColumn = idColumn;
    this.versionColumn = versionColumn;
  }

  /** The four fields, in delta-spark's order, to follow the format's own. */
  Seq fields() {
    ArrayList out = new ArrayList();
    out.add(generated(ROW_ID, idColumn));
    out.add(constant(BASE_ROW_ID));
    out.add(constant(DEFAULT_ROW_COMMIT_VERSION));
    out.add(generated(ROW_COMMIT_VERSION, versionColumn));
    return CollectionConverters.asScala(out).toList();
  }

  private static StructField generated(String name, String column) {
    // nullable: a file written before its rows were materialized has no such column
    return FileSourceGeneratedMetadataStructField$.MODULE$.apply(
        name, column, DataTypes.LongType, true);
  }

  private static StructField constant(String name) {
    return FileSourceConstantMetadataStructField$.MODULE$.apply(name, DataTypes.LongType, false);
  }

  public boolean equals(Object other) {
    return other instanceof RowTrackingFields
        && idColumn.equals(((RowTrackingFields) other).idColumn)
        && versionColumn.equals(((RowTrackingFields) other).versionColumn);
  }

  public int hashCode() {
    return idColumn.hashCode() * 31 + versionColumn.hashCode();
  }
}
