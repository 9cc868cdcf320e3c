package deltapyspark;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The logical-to-physical column names of a table with column mapping, applied to the schemas
 * Spark asks a Parquet reader for: data files name their columns (nested ones too) by physical
 * name, while Spark's plan, filters and pruned schemas use the logical ones. The reader returns
 * columns by position, so renaming what it is asked for is all a read needs.
 */
final class PhysicalSchema implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  private final StructType logical;
  private final StructType physical;

  /** {@code physical}: the table's data schema with physical names, field for field. */
  PhysicalSchema(StructType logical, StructType physical) {
    this.logical = logical;
    this.physical = physical;
  }

  /**
   * {@code requested} (a subset of the logical schema, nested fields pruned maybe) with physical
   * names; fields the table does not have (Spark's internal metadata columns) stay as they are.
   */
  StructType toPhysical(StructType requested) {
    return (StructType) map(requested, logical, physical);
  }

  private static DataType map(DataType requested, DataType logical, DataType physical) {
    if (requested instanceof StructType
        && logical instanceof StructType
        && physical instanceof StructType) {
      StructType want = (StructType) requested;
      StructType names = (StructType) logical;
      StructType files = (StructType) physical;
      StructField[] out = new StructField[want.fields().length];
      for (int i = 0; i < out.length; i++) {
        StructField field = want.fields()[i];
        int at = indexOf(names, field.name());
        if (at < 0) {
          out[i] = field;
        } else {
          StructField file = files.fields()[at];
          out[i] =
              new StructField(
                  file.name(),
                  map(field.dataType(), names.fields()[at].dataType(), file.dataType()),
                  field.nullable(),
                  file.metadata());
        }
      }
      return new StructType(out);
    }
    if (requested instanceof ArrayType
        && logical instanceof ArrayType
        && physical instanceof ArrayType) {
      ArrayType want = (ArrayType) requested;
      return new ArrayType(
          map(
              want.elementType(),
              ((ArrayType) logical).elementType(),
              ((ArrayType) physical).elementType()),
          want.containsNull());
    }
    if (requested instanceof MapType && logical instanceof MapType && physical instanceof MapType) {
      MapType want = (MapType) requested;
      MapType names = (MapType) logical;
      MapType files = (MapType) physical;
      return new MapType(
          map(want.keyType(), names.keyType(), files.keyType()),
          map(want.valueType(), names.valueType(), files.valueType()),
          want.valueContainsNull());
    }
    return requested;
  }

  /** Exact name first; Spark resolves case-insensitively by default, so fall back to that. */
  private static int indexOf(StructType schema, String name) {
    StructField[] fields = schema.fields();
    for (int i = 0; i < fields.length; i++) {
      if (fields[i].name().equals(name)) {
        return i;
      }
    }
    for (int i = 0; i < fields.length; i++) {
      if (fields[i].name().equalsIgnoreCase(name)) {
        return i;
      }
    }
    return -1;
  }

  public boolean equals(Object other) {
    return other instanceof PhysicalSchema
        && logical.equals(((PhysicalSchema) other).logical)
        && physical.equals(((PhysicalSchema) other).physical);
  }

  public int hashCode() {
    return physical.hashCode();
  }
}
