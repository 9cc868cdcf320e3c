package deltapyspark;

import java.util.HashMap;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.AliasIdentifier;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.RelationTimeTravel;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.InsertIntoStatement;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.command.ExplainCommand;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractPartialFunction;

/**
 * Spark's SQL parser, with four additions for Delta tables:
 *
 * <ul>
 *   <li>Delta's own statements (DESCRIBE HISTORY, OPTIMIZE, VACUUM, ...)
 *       on Delta tables become a {@link DeltaCommand} the Python API layer runs: a cheap look at
 *       the leading keywords decides whether to ask it ({@link DeltaCommands#describe}), and
 *       whatever it declines goes to Spark's parser untouched.
 *   <li>{@code delta.`path`} table references (read, or written by an INSERT) get their path
 *       as the {@code path} option. Spark resolves such a reference through the source's {@code
 *       createRelation}, which only receives the options (the path goes to it separately), so
 *       the source would not know which table to read.
 *   <li>Time travel ({@code VERSION AS OF}, {@code TIMESTAMP AS OF}, a {@code @v2} suffix of the
 *       name) on a Delta table becomes
 *       the {@code versionAsOf}/{@code timestampAsOf} options of a read of its path: Spark
 *       supports the syntax for its V2 tables only.
 *   <li>{@code [CREATE OR] REPLACE TABLE ... USING delta} becomes a {@link DefineDeltaTable}:
 *       Spark plans replacements for V2 catalogs only; so does a {@code CREATE TABLE} Spark's
 *       own command cannot make ({@link TableDefinitions#isDeltaCreate}).
 * </ul>
 */
public final class DeltaSqlParser extends VersionedParser {
  private static volatile DeltaCommands commands;
  private static volatile java.util.Set openings = java.util.Collections.emptySet();

  private final SparkSession session;

  public DeltaSqlParser(SparkSession session, ParserInterface delegate) {
    super(delegate);
    this.session = session;
  }

  /**
   * Called by the Python API layer when a session is set up, with the openings of Delta's
   * statements (one or two upper-case words each, one per line): the grammar's own list.
   */
  public static void register(DeltaCommands pythonCommands, String statementOpenings) {
    openings = new java.util.HashSet(java.util.Arrays.asList(statementOpenings.split("\n")));
    commands = pythonCommands;
  }

  /** A statement refused during analysis: the Python layer's typed error for {@code condition}. */
  static RuntimeException refused(String condition, String message) {
    return DeltaSource.error(commands().refusal(condition, message));
  }

  static DeltaCommands commands() {
    DeltaCommands registered = commands;
    if (registered == null) {
      throw DeltaSource.error(
          "Delta SQL statements run in delta-pyspark's Python API, which this JVM has not "
              + "registered: build the session with "
              + "delta_pyspark.configure_spark_with_delta(builder).getOrCreate()");
    }
    return registered;
  }

  public LogicalPlan parsePlan(String sql) throws ParseException {
    return parse(sql, null);
  }

  LogicalPlan parse(String sql, Object parameters) throws ParseException {
    DeltaCommands registered = commands;
    if (registered != null && mayBeDeltaStatement(sql)) {
      String answer = registered.describe(session, sql, SqlTokens.encode(sql));
      if (answer.startsWith("E")) {
        throw DeltaSource.error(answer.substring(1));
      }
      if (answer.startsWith("O")) {
        String[] fields = answer.substring(1).split("\0", -1);
        String ddl = fields[0];
        StructType schema = ddl.isEmpty() ? new StructType() : StructType.fromDDL(ddl);
        return withParameters(
            new DeltaCommand(
                sql,
                DataTypeUtils.toAttributes(schema),
                DeltaCommand.parameters(java.util.Arrays.asList(fields).subList(1, fields.length))),
            parameters);
      }
    }
    LogicalPlan plan = sparkParse(sql, parameters);
    LogicalPlan defined = defined(plan);
    if (defined != null) {
      return defined;
    }
    if (plan instanceof ExplainCommand) {
      ExplainCommand explain = (ExplainCommand) plan;
      defined = defined(explain.logicalPlan());
      if (defined != null) {
        return new ExplainCommand(defined, explain.mode());
      }
    }
    return withPaths(plan);
  }

  /** {@code plan} as a {@link DefineDeltaTable} when it defines a Delta table, else null. */
  private LogicalPlan defined(LogicalPlan plan) {
    if (!TableDefinitions.isDeltaReplace(plan) && !TableDefinitions.isDeltaCreate(plan)) {
      return null;
    }
    commands(); // the definition runs in Python: fail now if it is not there
    LogicalPlan query = TableDefinitions.queryOf(plan);
    return new DefineDeltaTable(
        TableDefinitions.ofPlan(plan), query == null ? null : withPaths(query));
  }

  public LogicalPlan parseQuery(String sql) throws ParseException {
    return withPaths(delegate.parseQuery(sql));
  }

  /**
   * Whether {@code sql} opens as one of Delta's statements (the openings the Python grammar
   * registered): only then is Python asked, so other statements cost a look at their first
   * tokens.
   */
  static boolean mayBeDeltaStatement(String sql) {
    java.util.Set registered = openings;
    String[] words = SqlTokens.leadingWords(sql, 2);
    return registered.contains(words[0]) || registered.contains(words[0] + " " + words[1]);
  }

  LogicalPlan withPaths(LogicalPlan plan) {
    return (LogicalPlan)
        plan.transformUpWithSubqueries(
            new AbstractPartialFunction() {
              public boolean isDefinedAt(Object node) {
                return isDeltaPath(node)
                    || isInsertIntoPath(node)
                    || TableChanges.isTableChanges(node)
                    || node instanceof RelationTimeTravel && !awaitsParameters(node)
                    || atSyntax(node) != null;
              }

              public Object applyOrElse(Object node, scala.Function1 fallback) {
                if (TableChanges.isTableChanges(node)) {
                  return TableChanges.read(
                      (org.apache.spark.sql.catalyst.analysis.UnresolvedTableValuedFunction) node,
                      session,
                      delegate);
                }
                if (node instanceof RelationTimeTravel) {
                  return awaitsParameters(node)
                      ? awaitingParameters((RelationTimeTravel) node)
                      : timeTravel(session, (RelationTimeTravel) node);
                }
                RelationTimeTravel at = atSyntax(node);
                if (at != null) {
                  LogicalPlan read = timeTravel(session, at);
                  return read == at ? node : read; // not a Delta table: Spark says so
                }
                if (isDeltaPath(node)) {
                  return withPath((UnresolvedRelation) node);
                }
                if (!isInsertIntoPath(node)) {
                  return fallback.apply(node);
                }
                // the table an INSERT writes to is no child of the statement
                InsertIntoStatement insert = (InsertIntoStatement) node;
                return DeltaPathInserts.withTable(
                    insert, withPath((UnresolvedRelation) insert.table()));
              }
            });
  }

  static UnresolvedRelation withPath(UnresolvedRelation relation) {
    HashMap options = new HashMap(relation.options().asCaseSensitiveMap());
    options.put("path", relation.multipartIdentifier().last());
    return relation.copy(
        relation.multipartIdentifier(),
        new CaseInsensitiveStringMap(options),
        relation.isStreaming());
  }

  private static boolean isInsertIntoPath(Object node) {
    return node instanceof InsertIntoStatement
        && isDeltaPath(((InsertIntoStatement) node).table());
  }

  /**
   * {@code relation VERSION AS OF v} / {@code TIMESTAMP AS OF ts} on a Delta table (a catalog
   * name or {@code delta.`path`}) as a read of its path with time-travel options; anything
   * else is left to Spark.
   */
  static LogicalPlan timeTravel(SparkSession session, RelationTimeTravel travel) {
    DeltaCommands registered = commands;
    if (registered == null || !(travel.relation() instanceof UnresolvedRelation)) {
      return travel;
    }
    UnresolvedRelation relation = withoutWaiting((UnresolvedRelation) travel.relation());
    String version = travel.version().isDefined() ? (String) travel.version().get() : "";
    String timestamp = "";
    if (travel.timestamp().isDefined()) {
      Expression expression = (Expression) travel.timestamp().get();
      timestamp =
          expression instanceof org.apache.spark.sql.catalyst.expressions.Literal
                  && expression.dataType() instanceof org.apache.spark.sql.types.StringType
              ? "s" + ((org.apache.spark.sql.catalyst.expressions.Literal) expression).value()
              : "e" + expression.sql();
    }
    String answer = registered.timeTravel(session, nameParts(relation), version, timestamp);
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    if (!answer.startsWith("O")) {
      return travel;
    }
    String[] fields = answer.substring(1).split("\0", -1);
    HashMap options = new HashMap(relation.options().asCaseSensitiveMap());
    options.put("path", fields[0]);
    if (!fields[1].isEmpty()) {
      options.put("versionAsOf", fields[1]);
    }
    if (!fields[2].isEmpty()) {
      options.put("timestampAsOf", fields[2]);
    }
    Seq path =
        scala.collection.immutable.List$.MODULE$.from(
            scala.Predef$.MODULE$.wrapRefArray(new Object[] {"delta", fields[0]}));
    UnresolvedRelation read =
        new UnresolvedRelation(path, new CaseInsensitiveStringMap(options), relation.isStreaming());
    if (isDeltaPath(new UnresolvedRelation(
        relation.multipartIdentifier(), CaseInsensitiveStringMap.empty(), false))) {
      return read; // as Spark names a delta.`path` read: by no alias
    }
    String alias = (String) relation.multipartIdentifier().last();
    return new SubqueryAlias(new AliasIdentifier(alias), read);
  }

  /** Time travel to a timestamp holding a parameter marker ({@link BoundTimeTravel}'s). */
  private static boolean awaitsParameters(Object node) {
    Option timestamp = ((RelationTimeTravel) node).timestamp();
    return timestamp.isDefined()
        && ((Expression) timestamp.get())
            .containsPattern(
                org.apache.spark.sql.catalyst.trees.TreePattern$.MODULE$.PARAMETER());
  }

  /**
   * The first name part of a {@code delta.`path`} whose time travel awaits a bound timestamp:
   * Spark's analyzer refuses a file's time travel ({@code delta} names a source) before any
   * rule of an extension sees the bound value, so the path waits under this name, which
   * names no source, until {@link BoundTimeTravel} reads it.
   */
  private static final String PATH_AWAITING_PARAMETERS = "__delta_pyspark_path_awaiting";

  /** Time travel whose timestamp holds a marker, left for {@link BoundTimeTravel}. */
  private static LogicalPlan awaitingParameters(RelationTimeTravel travel) {
    // the path's relation was given its path option already (transformed before its parent)
    if (!(travel.relation() instanceof UnresolvedRelation)
        || !isDeltaPath(
            new UnresolvedRelation(
                ((UnresolvedRelation) travel.relation()).multipartIdentifier(),
                CaseInsensitiveStringMap.empty(),
                false))) {
      return travel;
    }
    UnresolvedRelation relation = (UnresolvedRelation) travel.relation();
    Seq waiting =
        scala.collection.immutable.List$.MODULE$.from(
            scala.Predef$.MODULE$.wrapRefArray(
                new Object[] {PATH_AWAITING_PARAMETERS, relation.multipartIdentifier().last()}));
    return new RelationTimeTravel(
        new UnresolvedRelation(waiting, relation.options(), relation.isStreaming()),
        travel.timestamp(),
        travel.version());
  }

  /** {@code relation} with the {@code delta} part {@link #awaitingParameters} set aside. */
  private static UnresolvedRelation withoutWaiting(UnresolvedRelation relation) {
    Seq parts = relation.multipartIdentifier();
    if (parts.size() != 2 || !PATH_AWAITING_PARAMETERS.equals(parts.head())) {
      return relation;
    }
    Seq delta =
        scala.collection.immutable.List$.MODULE$.from(
            scala.Predef$.MODULE$.wrapRefArray(new Object[] {"delta", parts.last()}));
    return new UnresolvedRelation(delta, relation.options(), relation.isStreaming());
  }

  /** Whether {@code relation} names a Delta table of the session (a catalog name). */
  static boolean isDeltaTable(SparkSession session, UnresolvedRelation relation) {
    DeltaCommands registered = commands;
    if (registered == null) {
      return false;
    }
    String answer = registered.timeTravel(session, nameParts(relation), "", "");
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    return answer.startsWith("O");
  }

  /** A relation's multipart name as {@link DeltaCommands#timeTravel} takes it. */
  private static String nameParts(UnresolvedRelation relation) {
    return nameParts(relation.multipartIdentifier());
  }

  /** Multipart name {@code parts}, each followed by a NUL, as the Python side takes them. */
  static String nameParts(Seq parts) {
    StringBuilder name = new StringBuilder();
    scala.collection.Iterator it = parts.iterator();
    while (it.hasNext()) {
      name.append((String) it.next()).append('\0');
    }
    return name.toString();
  }

  private static final java.util.regex.Pattern AT_VERSION =
      java.util.regex.Pattern.compile("(.+)@[vV](\\d+)");
  private static final java.util.regex.Pattern AT_TIMESTAMP =
      java.util.regex.Pattern.compile(
          "(.+)@(\\d{4})(\\d\\d)(\\d\\d)(\\d\\d)(\\d\\d)(\\d\\d)(\\d{3})");

  /**
   * delta-spark's {@code @} syntax on a table name ({@code `t@v2`}, {@code
   * `db.t@20240101120000000`}: version, or timestamp as yyyyMMddHHmmssSSS) as the time travel
   * it means; null for any other node. ({@code delta.`path@v2`} is the source's to read.)
   */
  static RelationTimeTravel atSyntax(Object node) {
    if (!(node instanceof UnresolvedRelation) || isDeltaPath(node)) {
      return null;
    }
    UnresolvedRelation relation = (UnresolvedRelation) node;
    Seq parts = relation.multipartIdentifier();
    String last = (String) parts.last();
    java.util.regex.Matcher version = AT_VERSION.matcher(last);
    java.util.regex.Matcher timestamp = AT_TIMESTAMP.matcher(last);
    Option versionText = Option.empty();
    Option timestampExpression = Option.empty();
    String name;
    if (version.matches()) {
      name = version.group(1);
      versionText = Option.apply(version.group(2));
    } else if (timestamp.matches()) {
      name = timestamp.group(1);
      String text =
          timestamp.group(2) + "-" + timestamp.group(3) + "-" + timestamp.group(4) + " "
              + timestamp.group(5) + ":" + timestamp.group(6) + ":" + timestamp.group(7) + "."
              + timestamp.group(8);
      timestampExpression =
          Option.apply(
              org.apache.spark.sql.catalyst.expressions.Literal$.MODULE$.create(
                  text, org.apache.spark.sql.types.DataTypes.StringType));
    } else {
      return null;
    }
    Seq stripped = (Seq) ((Seq) parts.dropRight(1)).$colon$plus(name);
    return new RelationTimeTravel(
        new UnresolvedRelation(stripped, relation.options(), relation.isStreaming()),
        timestampExpression,
        versionText);
  }

  static boolean isDeltaPath(Object node) {
    if (!(node instanceof UnresolvedRelation)) {
      return false;
    }
    UnresolvedRelation relation = (UnresolvedRelation) node;
    Seq parts = relation.multipartIdentifier();
    return parts.size() == 2
        && "delta".equalsIgnoreCase((String) parts.head())
        && !relation.options().containsKey("path");
  }

  public Expression parseExpression(String sql) throws ParseException {
    return delegate.parseExpression(sql);
  }

  public TableIdentifier parseTableIdentifier(String sql) throws ParseException {
    return delegate.parseTableIdentifier(sql);
  }

  public FunctionIdentifier parseFunctionIdentifier(String sql) throws ParseException {
    return delegate.parseFunctionIdentifier(sql);
  }

  public Seq parseMultipartIdentifier(String sql) throws ParseException {
    return delegate.parseMultipartIdentifier(sql);
  }

  public StructType parseRoutineParam(String sql) throws ParseException {
    return delegate.parseRoutineParam(sql);
  }

  public StructType parseTableSchema(String sql) throws ParseException {
    return delegate.parseTableSchema(sql);
  }

  public DataType parseDataType(String sql) throws ParseException {
    return delegate.parseDataType(sql);
  }
}
