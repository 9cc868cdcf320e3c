package deltapyspark;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * The rows that deletion vectors mark in the files of one scan, by file: what
 * {@link DeletionVectorParquetFormat}'s reader drops. Broadcast to the executors of a scan.
 *
 * <p>Compiled with Janino (bundled with Spark) when the session is configured, so only plain
 * Java 1.7 syntax: no generics, lambdas or diamonds.
 */
public final class DeletedRows implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  /** Spark's {@code _metadata.file_path} of each file -> its deleted row indexes, sorted. */
  private final HashMap byFile = new HashMap();

  private long total;

  /**
   * Adds files' deleted rows in one call (a py4j call per file would dominate for thousands of
   * files): {@code paths} are the files' {@code _metadata.file_path} values in UTF-8, each
   * followed by a 0 byte; {@code counts} how many row indexes each has and {@code rowIndexes}
   * all of them, file after file, ascending within a file: both little-endian int64.
   */
  public void addAll(byte[] paths, byte[] counts, byte[] rowIndexes) {
    LongBuffer sizes = ByteBuffer.wrap(counts).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer();
    LongBuffer all = ByteBuffer.wrap(rowIndexes).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer();
    int start = 0;
    while (sizes.hasRemaining()) {
      int end = start;
      while (paths[end] != 0) {
        end++;
      }
      String path = new String(paths, start, end - start, StandardCharsets.UTF_8);
      start = end + 1;
      long[] rows = new long[(int) sizes.get()];
      all.get(rows);
      for (int i = 1; i < rows.length; i++) {
        if (rows[i] <= rows[i - 1]) {
          throw new IllegalArgumentException("row indexes of " + path + " are not ascending");
        }
      }
      if (byFile.put(path, rows) != null) {
        throw new IllegalArgumentException("two deletion vectors for " + path);
      }
      total += rows.length;
    }
  }

  /** The deleted row indexes of {@code file} (its {@code _metadata.file_path}), ascending. */
  public long[] rowsOf(String file) {
    Object rows = byFile.get(file);
    if (rows == null) {
      // Never read a file as if nothing were deleted: the scan and the vectors disagree.
      throw new IllegalStateException("no deletion vector was loaded for " + file);
    }
    return (long[]) rows;
  }

  public boolean equals(Object other) {
    if (!(other instanceof DeletedRows)) {
      return false;
    }
    HashMap theirs = ((DeletedRows) other).byFile;
    if (theirs.size() != byFile.size()) {
      return false;
    }
    Iterator entries = byFile.entrySet().iterator();
    while (entries.hasNext()) {
      Map.Entry entry = (Map.Entry) entries.next();
      Object rows = theirs.get(entry.getKey());
      if (rows == null || !Arrays.equals((long[]) rows, (long[]) entry.getValue())) {
        return false;
      }
    }
    return true;
  }

  public int hashCode() {
    return byFile.keySet().hashCode() * 31 + (int) total;
  }

  public String toString() {
    return "DeletedRows(" + total + " rows in " + byFile.size() + " files)";
  }
}
