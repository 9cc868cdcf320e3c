package deltapyspark;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.roaringbitmap.RoaringBitmap;

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
   * followed by a 0 byte; {@code bitmaps} each file's rows as a 64-bit roaring bitmap in its
   * portable serialization (little-endian bucket count, then per bucket its high 32 bits and
   * a 32-bit portable roaring bitmap), file after file. Bitmaps are 4-8x smaller than the row
   * indexes they hold, and py4j sends bytes base64-encoded.
   */
  public void addAll(byte[] paths, byte[] bitmaps) throws java.io.IOException {
    ByteBuffer in = ByteBuffer.wrap(bitmaps).order(ByteOrder.LITTLE_ENDIAN);
    int start = 0;
    while (start < paths.length) {
      int end = start;
      while (paths[end] != 0) {
        end++;
      }
      String path = new String(paths, start, end - start, StandardCharsets.UTF_8);
      start = end + 1;
      long[] rows = positions(in);
      if (byFile.put(path, rows) != null) {
        throw new IllegalArgumentException("two deletion vectors for " + path);
      }
      total += rows.length;
    }
    if (in.hasRemaining()) {
      throw new IllegalArgumentException(in.remaining() + " bytes left after the last bitmap");
    }
  }

  /** The ascending positions of the 64-bit bitmap at {@code in}, which moves past it. */
  static long[] positions(ByteBuffer in) throws java.io.IOException {
    int buckets = (int) in.getLong();
    int[] keys = new int[buckets];
    RoaringBitmap[] bitmaps = new RoaringBitmap[buckets];
    long total = 0;
    for (int b = 0; b < buckets; b++) {
      keys[b] = in.getInt();
      bitmaps[b] = new RoaringBitmap();
      bitmaps[b].deserialize(((ByteBuffer) in.slice()).order(ByteOrder.LITTLE_ENDIAN));
      in.position(in.position() + bitmaps[b].serializedSizeInBytes());
      total += bitmaps[b].getLongCardinality();
    }
    long[] rows = new long[(int) total];
    int k = 0;
    for (int b = 0; b < buckets; b++) {
      long high = ((long) keys[b]) << 32;
      int[] low = bitmaps[b].toArray();
      for (int i = 0; i < low.length; i++) {
        rows[k++] = high | (low[i] & 0xFFFFFFFFL);
      }
    }
    return rows;
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
