"""What the JVM's ``delta`` source calls back into: the callback service answering Spark's
planner (snapshots, skipping, file listings, writes), the streaming source and sink, and the
change data feed reader."""
