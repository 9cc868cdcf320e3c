package deltapyspark;

import java.util.Optional;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.CommandPlugin;
import org.apache.spark.sql.connect.plugin.RelationPlugin;
import org.sparkproject.connect.protobuf.Any;

/**
 * delta-spark's Delta Connect messages ({@code delta.connect.DeltaRelation} and {@code
 * DeltaCommand}, which its Connect client sends in Spark Connect's extension fields) served
 * by the Python API layer ({@link DeltaCommands#connectRelation}, {@link
 * DeltaCommands#connectCommand}), as Spark Connect's relation and command plugin.
 */
public final class DeltaConnectMessages implements RelationPlugin, CommandPlugin {
  private static final String RELATION = "/delta.connect.DeltaRelation";
  private static final String COMMAND = "/delta.connect.DeltaCommand";

  public Optional transform(byte[] relation, SparkConnectPlanner planner) {
    Any any = parsed(relation);
    if (any == null || !any.getTypeUrl().endsWith(RELATION)) {
      return Optional.empty();
    }
    Object answer =
        DeltaSqlParser.commands().connectRelation(planner, any.getValue().toByteArray());
    if (answer instanceof String) {
      throw DeltaSource.error(((String) answer).substring(1));
    }
    return Optional.of(((org.apache.spark.sql.classic.Dataset) answer).logicalPlan());
  }

  public boolean process(byte[] command, SparkConnectPlanner planner) {
    Any any = parsed(command);
    if (any == null || !any.getTypeUrl().endsWith(COMMAND)) {
      return false;
    }
    String answer =
        DeltaSqlParser.commands().connectCommand(planner, any.getValue().toByteArray());
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    return true;
  }

  private static Any parsed(byte[] extension) {
    try {
      return Any.parseFrom(extension);
    } catch (Exception e) {
      return null;
    }
  }
}
