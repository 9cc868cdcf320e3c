package deltapyspark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.NoSuchElementException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.*;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.broadcast.Broadcast;
import scala.Function1;

/**
 * Reads one file (split) with Spark's Parquet reader and hands on only the rows its deletion
 * vector does not mark. Serialized with each task; the deleted rows are broadcast.
 */
final class DeletionVectorReader extends scala.runtime.AbstractFunction1
    implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  /** Spark's Parquet reader, asked for each row's index in its file. */
  private final Function1 indexed;
  /**
   * Spark's Parquet reader without row indexes, for whole files read unfiltered, or null; when
   * indexes are asked for, it returns batches and this reader adds them.
   */
  private final Function1 counted;
  /** Key of a listed file's deleted rows (ascending {@code long[]}) in its split's metadata. */
  static final String DELETED_ROWS = "__delta_pyspark_deleted_rows";

  /** The scan's {@link DeletedRows}, or null: each split carries its file's rows. */
  private final Broadcast deleted;
  /** What Spark's reader returns per row: the read fields, then the partition columns. */
  private final StructType rowSchema;
  private final int rowIndex;
  private final boolean dropRowIndex;

  DeletionVectorReader(
      Function1 indexed, Function1 counted, Broadcast deleted, StructType rowSchema,
      int rowIndex, boolean dropRowIndex) {
    this.indexed = indexed;
    this.counted = counted;
    this.deleted = deleted;
    this.rowSchema = rowSchema;
    this.rowIndex = rowIndex;
    this.dropRowIndex = dropRowIndex;
  }

  public Object apply(Object split) {
    PartitionedFile file = (PartitionedFile) split;
    // Spark's _metadata.file_path spelling, which the Python side keys files by
    String path = new org.apache.hadoop.fs.Path(file.toPath().toString()).toUri().toString();
    long[] rows;
    if (deleted != null) {
      rows = ((DeletedRows) deleted.value()).rowsOf(path);
    } else {
      scala.Option listed = file.otherConstantMetadataColumnValues().get(DELETED_ROWS);
      if (listed.isDefined()) {
        rows = (long[]) listed.get();
      } else {
        rows = new long[0];
      }
    }
    if (counted != null && file.start() == 0 && file.length() >= file.fileSize()) {
      return new LiveRows((scala.collection.Iterator) counted.apply(file), rows, false);
    }
    return new LiveRows((scala.collection.Iterator) indexed.apply(file), rows, true);
  }

  /**
   * The rows (or batches) of {@code rows}, a whole split read from its first row without
   * pushed filters, without those at the ascending positions {@code gone} (counted from the
   * split's first row).
   */
  static scala.collection.Iterator without(scala.collection.Iterator rows, long[] gone) {
    DeletionVectorReader counting = new DeletionVectorReader(null, null, null, null, -1, true);
    return counting.new LiveRows(rows, gone, false);
  }

  /** The first position of {@code sorted} holding a value {@code >= value}. */
  static int lowerBound(long[] sorted, long value) {
    int k = Arrays.binarySearch(sorted, value);
    return k >= 0 ? k : -k - 1;
  }

  /** Spark's reader's batches (or rows) of one split, without the deleted rows. */
  private final class LiveRows extends scala.collection.AbstractIterator {
    private final scala.collection.Iterator rows;
    private final long[] gone;
    /** Whether rows carry their index (at {@code rowIndex}); else they are counted. */
    private final boolean hasIndex;
    /** The index of the next row, when counting. */
    private long position;
    private Object pending;
    private UnsafeProjection dropIndex;
    /** The row indexes this reader counts, when asked for them. */
    private OnHeapColumnVector counter;
    private int counterCapacity;

    LiveRows(scala.collection.Iterator rows, long[] gone, boolean hasIndex) {
      this.rows = rows;
      this.gone = gone;
      this.hasIndex = hasIndex;
    }

    public boolean hasNext() {
      while (pending == null && rows.hasNext()) {
        Object next = rows.next();
        pending = next instanceof ColumnarBatch ? live((ColumnarBatch) next) : live((InternalRow) next);
      }
      return pending != null;
    }

    public Object next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      Object next = pending;
      pending = null;
      return next;
    }

    /**
     * The batch with its deleted rows removed in place (the reader refills its vectors for the
     * next batch); null if no row is left.
     */
    private ColumnarBatch live(ColumnarBatch batch) {
      int n = batch.numRows();
      ColumnVector index = hasIndex ? batch.column(rowIndex) : null;
      long first = position;
      position += n;
      if (!hasIndex && !dropRowIndex) {
        batch = withCountedIndex(batch, first, n);
      }
      int size = n;
      if (n > 0 && gone.length > 0) {
        if (hasIndex) {
          first = index.getLong(0);
        }
        long last = hasIndex ? index.getLong(n - 1) : first + n - 1;
        int d = lowerBound(gone, first);
        if (d < gone.length && gone[d] <= last) {
          int[] picks = new int[n];
          size = 0;
          int moved = -1;
          boolean contiguous = last - first == n - 1;
          for (int i = 0; i < n; i++) {
            long row = contiguous ? first + i : index.getLong(i);
            while (d < gone.length && gone[d] < row) {
              d++;
            }
            if (d == gone.length || gone[d] != row) {
              if (moved < 0 && size != i) {
                moved = size;
              }
              picks[size++] = i;
            }
          }
          if (size == 0) {
            return null;
          }
          if (moved >= 0) {
            for (int c = 0; c < batch.numCols(); c++) {
              keep(batch.column(c), picks, moved, size);
            }
          }
          batch.setNumRows(size);
        }
      }
      if (!hasIndex || !dropRowIndex) {
        return batch;
      }
      ColumnVector[] columns = new ColumnVector[batch.numCols() - 1];
      for (int c = 0, k = 0; c < batch.numCols(); c++) {
        if (c != rowIndex) {
          columns[k++] = batch.column(c);
        }
      }
      return new ColumnarBatch(columns, size);
    }

    /** {@code batch} with the row index field filled by counting from {@code first}. */
    private ColumnarBatch withCountedIndex(ColumnarBatch batch, long first, int n) {
      if (counterCapacity < n) {
        counterCapacity = Math.max(n, 4096);
        counter = new OnHeapColumnVector(counterCapacity, DataTypes.LongType);
      }
      for (int i = 0; i < n; i++) {
        counter.putLong(i, first + i);
      }
      ColumnVector[] columns = new ColumnVector[batch.numCols() + 1];
      for (int c = 0; c < columns.length; c++) {
        columns[c] = c < rowIndex ? batch.column(c) : c == rowIndex ? counter : batch.column(c - 1);
      }
      return new ColumnarBatch(columns, n);
    }

    private InternalRow live(InternalRow row) {
      long at = hasIndex ? row.getLong(rowIndex) : position++;
      if (Arrays.binarySearch(gone, at) >= 0) {
        return null;
      }
      if (!hasIndex || !dropRowIndex) {
        return row;
      }
      if (dropIndex == null) {
        ArrayList kept = new ArrayList();
        StructField[] fields = rowSchema.fields();
        for (int i = 0; i < fields.length; i++) {
          if (i != rowIndex) {
            kept.add(new BoundReference(i, fields[i].dataType(), fields[i].nullable()));
          }
        }
        dropIndex = UnsafeProjection.create(scala.jdk.javaapi.CollectionConverters.asScala(kept).toList());
      }
      return dropIndex.apply(row);
    }
  }

  /**
   * Moves rows {@code picks[from..size)} of {@code column} to positions {@code from..size)}.
   * Picks ascend and {@code picks[i] >= i}, so no row is overwritten before it is moved.
   * Values behind offsets (strings, binaries, arrays, maps, wide decimals) and dictionary
   * entries stay where they are: only offsets, lengths and dictionary ids move.
   */
  static void keep(ColumnVector column, int[] picks, int from, int size) {
    if (column instanceof ConstantColumnVector) {
      return; // a partition value: the same on every row
    }
    if (!(column instanceof WritableColumnVector)) {
      throw new IllegalStateException("cannot drop rows from a " + column.getClass().getName());
    }
    WritableColumnVector v = (WritableColumnVector) column;
    if (v.isAllNull()) {
      return;
    }
    DataType type = v.dataType();
    WritableColumnVector ids = v.hasDictionary() ? v.getDictionaryIds() : null;
    int storage = ids != null ? INT : storage(type);
    WritableColumnVector values = ids != null ? ids : v;
    boolean nulls = v.hasNull();
    for (int i = from; i < size; i++) {
      int j = picks[i];
      if (nulls) {
        if (v.isNullAt(j)) {
          v.putNull(i);
          continue;
        }
        v.putNotNull(i);
      }
      switch (storage) {
        case BOOLEAN:
          values.putBoolean(i, values.getBoolean(j));
          break;
        case BYTE:
          values.putByte(i, values.getByte(j));
          break;
        case SHORT:
          values.putShort(i, values.getShort(j));
          break;
        case INT:
          values.putInt(i, values.getInt(j));
          break;
        case LONG:
          values.putLong(i, values.getLong(j));
          break;
        case FLOAT:
          values.putFloat(i, values.getFloat(j));
          break;
        case DOUBLE:
          values.putDouble(i, values.getDouble(j));
          break;
        case OFFSETS:
          values.putArray(i, values.getArrayOffset(j), values.getArrayLength(j));
          break;
        default: // CHILDREN, NONE: nothing stored per row but nulls
      }
    }
    if (storage == CHILDREN) {
      for (int c = 0; c < v.getNumChildren(); c++) {
        keep(v.getChild(c), picks, from, size);
      }
    }
  }

  private static final int BOOLEAN = 0;
  private static final int BYTE = 1;
  private static final int SHORT = 2;
  private static final int INT = 3;
  private static final int LONG = 4;
  private static final int FLOAT = 5;
  private static final int DOUBLE = 6;
  private static final int OFFSETS = 7;
  private static final int CHILDREN = 8;
  private static final int NONE = 9;

  /** How Spark's writable vectors store a value of {@code type} per row. */
  private static int storage(DataType type) {
    if (type instanceof BooleanType) {
      return BOOLEAN;
    }
    if (type instanceof ByteType) {
      return BYTE;
    }
    if (type instanceof ShortType) {
      return SHORT;
    }
    if (type instanceof IntegerType || type instanceof DateType
        || type instanceof YearMonthIntervalType || isDecimal(type, Decimal.MAX_INT_DIGITS())) {
      return INT;
    }
    if (type instanceof LongType || type instanceof TimestampType
        || type instanceof TimestampNTZType || type instanceof DayTimeIntervalType
        || isDecimal(type, Decimal.MAX_LONG_DIGITS())) {
      return LONG;
    }
    if (type instanceof FloatType) {
      return FLOAT;
    }
    if (type instanceof DoubleType) {
      return DOUBLE;
    }
    if (type instanceof StringType || type instanceof BinaryType || type instanceof ArrayType
        || type instanceof MapType || type instanceof DecimalType) {
      return OFFSETS;
    }
    if (type instanceof StructType || type instanceof CalendarIntervalType
        || type instanceof VariantType) {
      return CHILDREN;
    }
    if (type instanceof NullType) {
      return NONE;
    }
    throw new IllegalStateException("cannot drop rows from a column of type " + type);
  }

  private static boolean isDecimal(DataType type, int maxPrecision) {
    return type instanceof DecimalType && ((DecimalType) type).precision() <= maxPrecision;
  }
}
