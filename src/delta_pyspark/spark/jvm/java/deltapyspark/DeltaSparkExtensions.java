package deltapyspark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand;
import scala.Option;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * delta-pyspark's session extension ({@code spark.sql.extensions}): the SQL parser that names
 * the table of {@code delta.`path`} to the source ({@link DeltaSqlParser}, and {@link
 * DeltaTableReferences} for plans the parser does not see), Spark-parsed statements whose
 * answer on a Delta table is Delta's ({@link SparkParsedStatements}), the rules that run
 * Spark's MERGE, UPDATE and DELETE on Delta tables as the Python core's commands ({@link
 * MergeStars}, {@link DeltaDml}), time travel to a bound parameter ({@link BoundTimeTravel}),
 * the rule that runs
 * SQL inserts into Delta tables as the Python core's writes ({@link DeltaWrites}), the stable
 * row ids and commit versions of {@code _metadata} ({@link RowTrackingIds}), and a check
 * that refuses any plain Parquet write into a Delta table that rule did not replace.
 */
public final class DeltaSparkExtensions extends AbstractFunction1 {
  public Object apply(Object injected) {
    SparkSessionExtensions extensions = (SparkSessionExtensions) injected;
    extensions.injectParser(
        new AbstractFunction2() {
          public Object apply(Object session, Object parser) {
            return new DeltaSqlParser((SparkSession) session, (ParserInterface) parser);
          }
        });
    extensions.injectHintResolutionRule(
        new AbstractFunction1() {
          public Object apply(Object session) {
            return new DeltaTableReferences((SparkSession) session);
          }
        });
    extensions.injectHintResolutionRule(
        new AbstractFunction1() {
          public Object apply(Object session) {
            return new MergeStars();
          }
        });
    extensions.injectHintResolutionRule(
        new AbstractFunction1() {
          public Object apply(Object session) {
            return new SparkParsedStatements((SparkSession) session);
          }
        });
    extensions.injectResolutionRule(
        new AbstractFunction1() {
          public Object apply(Object session) {
            return new DeltaPathInserts((SparkSession) session);
          }
        });
    extensions.injectResolutionRule(
        new AbstractFunction1() {
          public Object apply(Object session) {
            return new DeltaDml();
          }
        });
    extensions.injectResolutionRule(
        new AbstractFunction1() {
          public Object apply(Object session) {
            return new BoundTimeTravel((SparkSession) session);
          }
        });
    extensions.injectPostHocResolutionRule(
        new AbstractFunction1() {
          public Object apply(Object session) {
            return new DeltaWrites();
          }
        });
    extensions.injectPlanNormalizationRule(
        new AbstractFunction1() {
          public Object apply(Object session) {
            return new RowTrackingIds();
          }
        });
    extensions
        .injectCheckRule(
            new AbstractFunction1() {
              public Object apply(Object session) {
                return new AbstractFunction1() {
                  public Object apply(Object plan) {
                    if (plan instanceof InsertIntoHadoopFsRelationCommand) {
                      Option index = ((InsertIntoHadoopFsRelationCommand) plan).fileIndex();
                      if (index.isDefined() && index.get() instanceof DeltaFileIndex) {
                        throw DeltaSource.writeRefused();
                      }
                    }
                    return BoxedUnit.UNIT;
                  }
                };
              }
            });
    return BoxedUnit.UNIT;
  }
}
