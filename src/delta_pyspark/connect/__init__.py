"""Spark Connect with Delta: ``DeltaTable`` on a Connect session whose server runs in this
process (``tables``), delta-spark's Delta Connect messages served to its client
(``messages``, ``delta_connect``), and ``delta-pyspark connect-server`` (``server``)."""
