package deltapyspark;

/**
 * delta-pyspark's Python core as the Delta source sees it: implemented in the driver's Python
 * and called over py4j's callback server, so the Python core stays the only reader of the log.
 *
 * <p>Answers are flat strings and bytes (py4j sends bytes base64-encoded in one message): a
 * py4j round trip per file would dominate planning on tables of thousands of files. An answer
 * starting with {@code 'E'} is an error whose message follows; otherwise it starts with
 * {@code 'O'}.
 */
public interface DeltaTables {
  /**
   * Resolves the table at {@code path} for a new relation. {@code options} are the read's
   * options as {@code key NUL value NUL ...}. Answer: {@code O table-id NUL table-root NUL
   * schema-json NUL partition-schema-json NUL size-in-bytes NUL format NUL physical-schema-json
   * NUL reader NUL row-id-column NUL row-commit-version-column}, format {@code dv} when files
   * may have deletion vectors, else empty; the physical schema (the data schema with the names
   * data files use) when the table uses column mapping, else empty; reader {@code rows} when
   * only Spark's row-based Parquet reader reads the files right, else empty; the materialized
   * row tracking columns when row tracking is enabled (and the listing then carries each file's
   * row tracking constants), else empty.
   */
  String open(String path, String options, String timeZone);

  /**
   * The files of the table's current snapshot (or its pinned one) that may hold rows matching
   * the filters (SQL texts, NUL-separated). {@code packing}: {@code max-split-bytes,open-cost,
   * task-slots} of the session, or empty to leave the packing of files into tasks to Spark.
   * Answer: {@code O split-bytes NUL row-tracking NUL} (split-bytes empty: Spark's;
   * row-tracking {@code r} or empty) then per file {@code path NUL size NUL modification-time
   * NUL deleted-rows NUL} (the rows its deletion vector marks as a base64 portable 64-bit
   * roaring bitmap, or empty), with row tracking {@code base-row-id NUL
   * default-row-commit-version NUL}, and one {@code value NUL} per partition column ({@code
   * \u0001} for null), UTF-8, files of one partition adjacent.
   */
  byte[] listFiles(String tableId, String filters, String timeZone, String packing);

  /**
   * A change data feed read ({@code readChangeFeed}) of the table at {@code path} with {@code
   * options}: the {@code Dataset} (of {@code session}) of its rows, or an error answer
   * ({@code String}).
   */
  Object changes(Object session, String path, String options, String timeZone);

  /**
   * Writes {@code data} (a {@code Dataset} of {@code session}) to the table at {@code path} as
   * {@code df.write.format("delta").mode(mode).options(options).save(path)} does from Python:
   * one transaction of the Python core. {@code mode}: {@code append}, {@code overwrite},
   * {@code error} or {@code ignore}; {@code options}: {@code key NUL value NUL ...} ({@code
   * __partition_columns} as Spark passes {@code partitionBy}). Answer: {@code O}, or an error.
   */
  String write(Object session, String path, String mode, String options, Object data);

  /**
   * The schema a streaming read of the table at {@code path} with {@code options} delivers:
   * {@code O spark-schema-json NUL log-schema-string}, or an error.
   */
  String streamSchema(String path, String options);

  /**
   * The offset after the next micro-batch of a streaming read of schema {@code schemaString}
   * (as the log writes it) from {@code start} (empty: from
   * the beginning), within the read's limits when {@code limited}, not past {@code
   * endVersion} (negative: no end): {@code O offset-json}, {@code O} alone when nothing is
   * new, or an error.
   */
  String streamOffset(
      String path, String options, String schemaString, String start, boolean limited,
      long endVersion);

  /** The table's latest version: {@code O version}, or an error. */
  String latestVersion(String path);

  /**
   * Writes micro-batch {@code batchId} of streaming query {@code queryId} ({@code data}, a
   * Dataset of {@code session}) to the table at {@code path} in {@code outputMode} ({@code
   * append} or {@code complete}), once: {@code O}, or an error.
   */
  String writeStream(
      Object session, String path, long batchId, String queryId, String outputMode,
      String options, Object data);

  /**
   * A Spark Connect client's {@code saveAsTable} or {@code writeTo} action ({@code command},
   * a serialized {@code spark.connect.Command}), run in the session of {@code planner} (its
   * {@code SparkConnectPlanner}) as a classic session's call is: {@code O}, or an error.
   */
  String connectWrite(Object planner, byte[] command);
}
