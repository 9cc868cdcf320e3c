package deltapyspark;

import org.apache.spark.sql.catalyst.parser.ParserInterface;

/**
 * The part of {@link DeltaSqlParser} that follows {@code ParserInterface} across Spark
 * versions: Spark 4.1 and 4.2 add statement parameters given to the parser.
 */
abstract class VersionedParser extends ParameterizedParser {
  VersionedParser(ParserInterface delegate) {
    super(delegate);
  }
}
