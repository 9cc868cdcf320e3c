package deltapyspark;

import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;

/**
 * The part of {@link DeltaSqlParser} that follows {@code ParserInterface} across Spark
 * versions: Spark 4.3 adds statement splitting (Spark's, unchanged) to 4.1's parameters.
 */
abstract class VersionedParser extends ParameterizedParser {
  VersionedParser(ParserInterface delegate) {
    super(delegate);
  }

  public SqlStatementSplitResult splitStatements(String sql) {
    return delegate.splitStatements(sql);
  }
}
