"""Tests of the Spark engine (conformance/engine/spark.py, spark_session.py, servers/spark_cluster.py)."""
