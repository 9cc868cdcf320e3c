"""The one package that touches PySpark's internals and the JVM: py4j handles, Catalyst
objects, process-wide hooks, and the Java helper (``java/``, compiled with Janino at session
set-up) that registers the ``delta`` source and the session extension."""
