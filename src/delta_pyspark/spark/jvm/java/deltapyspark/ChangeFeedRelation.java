package deltapyspark;

import java.util.Locale;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.PrunedScan;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;
import scala.collection.Iterator;
import scala.collection.immutable.Map;

/**
 * A change data feed read ({@code readChangeFeed}): the rows of the {@code Dataset} the Python
 * core built (native Parquet scans of the change files, see {@code change_feed.py}), which a V1
 * relation cannot be itself. Each scan runs that Dataset's plan, with only the columns asked.
 */
public final class ChangeFeedRelation extends BaseRelation implements PrunedScan {
  private final SQLContext context;
  private final Dataset changes;
  private final String path;

  ChangeFeedRelation(SQLContext context, Dataset changes, String path) {
    this.context = context;
    this.changes = changes;
    this.path = path;
  }

  /** Whether read options ask for the change data feed. */
  static boolean asked(Map parameters) {
    Iterator it = parameters.iterator();
    while (it.hasNext()) {
      Tuple2 option = (Tuple2) it.next();
      String key = ((String) option._1()).toLowerCase(Locale.ROOT);
      if ((key.equals("readchangefeed") || key.equals("readchangedata"))
          && "true".equalsIgnoreCase(((String) option._2()).trim())) {
        return true;
      }
    }
    return false;
  }

  public SQLContext sqlContext() {
    return context;
  }

  public StructType schema() {
    return changes.schema();
  }

  /** The rows are Spark's internal ones already. */
  public boolean needConversion() {
    return false;
  }

  public RDD buildScan(String[] requiredColumns) {
    Column[] columns = new Column[requiredColumns.length];
    for (int i = 0; i < columns.length; i++) {
      columns[i] = changes.col("`" + requiredColumns[i].replace("`", "``") + "`");
    }
    return changes.select(columns).queryExecution().toRdd();
  }

  public String toString() {
    return "DeltaChangeFeed[" + path + "]";
  }
}
