package deltapyspark;

import org.apache.spark.connect.proto.Command;
import org.apache.spark.connect.proto.ExecutePlanRequest;
import org.apache.spark.connect.proto.Plan;
import org.apache.spark.connect.proto.WriteOperation;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.CommandPlugin;
import org.sparkproject.connect.grpc.ForwardingServerCallListener;
import org.sparkproject.connect.grpc.Metadata;
import org.sparkproject.connect.grpc.ServerCall;
import org.sparkproject.connect.grpc.ServerCallHandler;
import org.sparkproject.connect.grpc.ServerInterceptor;
import org.sparkproject.connect.protobuf.Any;

/**
 * A Spark Connect client's {@code saveAsTable} of a {@code delta} writer and its {@code
 * writeTo} actions, run by delta-pyspark's Python core as the same calls of a classic
 * session are. The server would run Spark's own: its {@code saveAsTable} drops a table it
 * overwrites (and a managed Delta table's log with it), and it plans {@code writeTo} for V2
 * catalogs only.
 *
 * <p>Spark Connect lets a server add gRPC interceptors and command plugins, not change how it
 * runs its own commands, so this class is both: as the interceptor it wraps such a command
 * in an extension message of ours, and as the plugin it hands that to Python ({@link
 * DeltaTables#connectWrite}).
 */
public final class ConnectWrites implements ServerInterceptor, CommandPlugin {
  private static final String WRAPPED = "deltapyspark/write";

  public ServerCall.Listener interceptCall(
      ServerCall call, Metadata headers, ServerCallHandler next) {
    return new ForwardingServerCallListener.SimpleForwardingServerCallListener(
        next.startCall(call, headers)) {
      public void onMessage(Object message) {
        super.onMessage(wrapped(message));
      }
    };
  }

  public boolean process(byte[] extension, SparkConnectPlanner planner) {
    Any any;
    try {
      any = Any.parseFrom(extension);
    } catch (Exception e) {
      return false;
    }
    if (!WRAPPED.equals(any.getTypeUrl())) {
      return false;
    }
    String answer = DeltaSource.tables().connectWrite(planner, any.getValue().toByteArray());
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    return true;
  }

  /** {@code message}, or the request with its write command wrapped when it is one of ours. */
  static Object wrapped(Object message) {
    if (!(message instanceof ExecutePlanRequest)) {
      return message;
    }
    ExecutePlanRequest request = (ExecutePlanRequest) message;
    if (!request.hasPlan() || !request.getPlan().hasCommand()) {
      return message;
    }
    Command command = request.getPlan().getCommand();
    if (!command.hasWriteOperationV2() && !isDeltaSaveAsTable(command)) {
      return message;
    }
    Any wrapped = Any.newBuilder().setTypeUrl(WRAPPED).setValue(command.toByteString()).build();
    Plan plan = Plan.newBuilder().setCommand(Command.newBuilder().setExtension(wrapped).build()).build();
    return ExecutePlanRequest.newBuilder(request).setPlan(plan).build();
  }

  private static boolean isDeltaSaveAsTable(Command command) {
    if (!command.hasWriteOperation()) {
      return false;
    }
    WriteOperation write = command.getWriteOperation();
    return write.hasTable()
        && write.getTable().getSaveMethod()
            == WriteOperation.SaveTable.TableSaveMethod.TABLE_SAVE_METHOD_SAVE_AS_TABLE
        && "delta".equalsIgnoreCase(write.getSource());
  }
}
