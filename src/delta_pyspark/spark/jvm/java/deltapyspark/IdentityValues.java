package deltapyspark;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF0;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * Values of an identity column, generated as delta-spark's per-partition generator does: the
 * task of partition {@code p} out of {@code n} gives {@code first + step * (p + n * k)} to its
 * {@code k}-th row, so tasks never give the same value, each task's values go in the step's
 * direction, and a write in one task gives consecutive values. An overflow fails the task
 * ({@code ArithmeticException}), as delta-spark's.
 */
public final class IdentityValues implements UDF0 {
  private final long first;
  private final long step;
  private long attempt = Long.MIN_VALUE; // the task attempt the sequence below belongs to
  private long next;
  private long increment;

  IdentityValues(long first, long step) {
    this.first = first;
    this.step = step;
  }

  /** A nondeterministic column of the values (Spark evaluates it once per row, in place). */
  public static Column column(long first, long step) {
    return functions
        .udf(new IdentityValues(first, step), DataTypes.LongType)
        .asNondeterministic()
        .apply(scala.collection.immutable.Nil$.MODULE$);
  }

  public Object call() throws Exception {
    TaskContext task = TaskContext.get();
    long current = task == null ? -1L : task.taskAttemptId();
    if (current != attempt) { // a task's copy starts its partition's sequence
      long partition = task == null ? 0L : task.partitionId();
      long partitions = task == null ? 1L : task.numPartitions();
      attempt = current;
      next = Math.addExact(first, Math.multiplyExact(partition, step));
      increment = Math.multiplyExact(partitions, step);
    }
    long value = next;
    next = Math.addExact(next, increment);
    return Long.valueOf(value);
  }
}
