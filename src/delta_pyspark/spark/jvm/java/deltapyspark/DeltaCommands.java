package deltapyspark;

/**
 * delta-pyspark's Python API layer as the SQL parser sees it ({@code delta_pyspark.sql}):
 * Delta's own statements (MERGE, UPDATE, DESCRIBE HISTORY, VACUUM, ...) are parsed and run by
 * the Python core, called over py4j's callback server. Answers starting with {@code 'E'} are
 * errors whose message follows; {@code 'N'} means "not a Delta statement or table": Spark's own
 * parser and analyzer take it.
 */
public interface DeltaCommands {
  /**
   * Whether {@code sql} is a Delta statement on a Delta table of {@code session}: {@code N},
   * an error, or {@code O} followed by the DDL of its result's columns (empty: no columns).
   */
  String describe(Object session, String sql);

  /**
   * Runs the Delta statement {@code sql} in {@code session}: its result as a Dataset whose
   * columns are those {@link #describe} announced, or an error as a String.
   */
  Object run(Object session, String sql);

  /**
   * Resolves a time-travel read of the table {@code nameParts} (NUL-separated parts of its
   * multipart name) at {@code version} or at the timestamp the SQL expression {@code
   * timestampSql} gives (each empty when absent): {@code N} when it names no Delta table, an
   * error, or {@code O table-path NUL version NUL timestamp}.
   */
  String timeTravel(Object session, String nameParts, String version, String timestampSql);

  /**
   * Replaces (or, with {@code orCreate}, creates) the table {@code definition} describes (see
   * {@link TableDefinitions}) with a Delta table holding {@code data} (a Dataset; null: empty,
   * of the definition's schema): {@code O}, or an error.
   */
  String replace(Object session, java.util.Map definition, Object data);
}
