package deltapyspark;

/**
 * delta-pyspark's Python API layer as the SQL parser sees it ({@code delta_pyspark.sql}):
 * Delta's own statements (DESCRIBE HISTORY, VACUUM, ...) are parsed and run by the Python core,
 * called over py4j's callback server, and so are Spark's MERGE, UPDATE and DELETE on Delta
 * tables once Spark has resolved them ({@link DeltaDml}). Answers starting with {@code 'E'} are
 * errors whose message follows; {@code 'N'} means "not a Delta statement or table": Spark's own
 * parser and analyzer take it.
 */
public interface DeltaCommands {
  /**
   * Whether {@code sql} (its {@code tokens} as {@link SqlTokens} encodes them) is a Delta
   * statement on a Delta table of {@code session}: {@code N}, an error, or {@code O} followed
   * by the DDL of its result's columns (empty: no columns) and, each after a NUL, its
   * parameter markers (see {@link DeltaCommand#parameters}).
   */
  String describe(Object session, String sql, String tokens);

  /**
   * Runs the Delta statement {@code sql} in {@code session}, its markers bound to {@code
   * values} (see {@link DeltaCommand}): its result as a Dataset whose columns are those
   * {@link #describe} announced, or an error as a String.
   */
  Object run(Object session, String sql, String tokens, java.util.List values);

  /**
   * Whether a statement Spark parsed ({@link SparkParsedStatements}: {@code kind} such as
   * {@code SHOW TBLPROPERTIES}, on the table {@code nameParts}, NUL-terminated parts, with one
   * {@code argument}) is Delta's to answer: {@code N}, an error, or {@code O} and the DDL of
   * its result's columns.
   */
  String sparkStatement(Object session, String kind, String nameParts, String argument);

  /** Runs a statement {@link #sparkStatement} accepted; the result as in {@link #run}. */
  Object runSparkStatement(Object session, String kind, String nameParts, String argument);

  /**
   * Resolves a time-travel read of the table {@code nameParts} (NUL-separated parts of its
   * multipart name) at {@code version} or at {@code timestamp} (each empty when absent; a
   * timestamp is {@code s} and a string, or {@code e} and a SQL expression; both empty to
   * ask whether the name is a Delta table's): {@code N} when it names no Delta table, an
   * error, or {@code O table-path NUL version NUL timestamp}.
   */
  String timeTravel(Object session, String nameParts, String version, String timestamp);

  /**
   * Creates, replaces (or, with {@code orCreate}, creates) the table {@code definition}
   * describes (see {@link TableDefinitions}) as a Delta table holding {@code data} (a Dataset;
   * null: empty, of the definition's schema): {@code O}, or an error.
   */
  String define(Object session, java.util.Map definition, Object data);

  /**
   * Runs a MERGE on the Delta table at {@code table} ({@code name}: its catalog name, or
   * null): {@code source} is the source Dataset, {@code condition} a Column whose target
   * columns are qualified by {@code targetAlias} and source columns by {@code sourceAlias};
   * each clause a Map of {@code when}, {@code action}, {@code condition} (a Column, absent
   * for none), {@code star} (true for {@code *}) or {@code assignments} (target column to
   * Column). The result as in {@link #run}.
   */
  Object merge(
      Object session, String table, String name, String targetAlias, Object source,
      String sourceAlias, Object condition, java.util.List clauses, boolean evolve);

  /** Runs an UPDATE ({@code condition}: a Column or null; columns unqualified). */
  Object update(Object session, String table, Object condition, java.util.Map assignments);

  /** Runs a DELETE ({@code condition}: a Column or null for all rows). */
  Object delete(Object session, String table, Object condition);

  /** An error answer for a statement refused during analysis: Delta's {@code condition}. */
  String refusal(String condition, String message);

  /**
   * The result of a Delta Connect {@code DeltaRelation} ({@code relation}, serialized) in the
   * session of {@code planner} (a {@code SparkConnectPlanner}): a {@code Dataset}, or an error
   * answer ({@code String}).
   */
  Object connectRelation(Object planner, byte[] relation);

  /** Runs a Delta Connect {@code DeltaCommand} (serialized): {@code O}, or an error answer. */
  String connectCommand(Object planner, byte[] command);
}
