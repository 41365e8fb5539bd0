"""Starting a PySpark session that stays on the loopback interface and fails fast.

PySpark 4.3.0 binds whatever address the host name resolves to unless told otherwise, and
a driver pointed at a standalone master that does not answer keeps retrying for minutes.
:func:`get_session` fixes both:

* before the first JVM starts it sets ``SPARK_LOCAL_IP=127.0.0.1``, ``PYSPARK_PYTHON`` and
  ``PYSPARK_DRIVER_PYTHON`` (both this interpreter, so executors import the same installed
  ``conformance`` package), and configures ``spark.driver.host`` /
  ``spark.driver.bindAddress`` = 127.0.0.1, ``spark.ui.enabled=false`` and
  ``spark.ui.showConsoleProgress=false``;
* the master defaults to ``local[*]``; ``spark://HOST:PORT`` (a standalone cluster) is
  probed with a plain TCP connect first, bounded by ``connect_timeout`` seconds, and an
  unreachable master raises :class:`SparkUnavailable` before any JVM is started. After the
  session exists, the cluster must grant at least one executor within ``connect_timeout``
  seconds, else the session is stopped and :class:`SparkUnavailable` is raised.

A session with the same master is reused (``getOrCreate``); asking for another master
stops the current one first, since one Python process holds one SparkContext.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import time

DEFAULT_MASTER = "local[*]"
DEFAULT_CONNECT_TIMEOUT = 30.0
LOOPBACK = "127.0.0.1"

_SPARK_URL = re.compile(r"^spark://([^:/]+):(\d+)/?$")
_LOCAL = re.compile(r"^local(\[(\*|\d+)(,\d+)?\])?$|^local-cluster\[\d+,\d+,\d+\]$")


class SparkUnavailable(RuntimeError):
    """PySpark is missing, or the master cannot be reached / grants no executor in time."""


def configure_environment() -> None:
    """Environment a PySpark driver needs here; call before the first JVM starts."""
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # pandas 3 prints a "not fully supported" warning in every worker; keep logs quiet
    os.environ.setdefault("PYTHONWARNINGS", "ignore::UserWarning")


def check_master(master: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
    """Raise :class:`SparkUnavailable` for a master URL that is malformed or does not answer."""
    if _LOCAL.match(master):
        return
    m = _SPARK_URL.match(master)
    if not m:
        raise SparkUnavailable(
            f"unsupported Spark master {master!r}: use local[N], local[*] or spark://HOST:PORT")
    host, port = m.group(1), int(m.group(2))
    try:
        with socket.create_connection((host, port), timeout=min(connect_timeout, 10.0)):
            pass
    except OSError as exc:
        raise SparkUnavailable(f"Spark master {master} is unreachable: {exc}") from None


def _wait_for_executor(spark, master: str, connect_timeout: float) -> None:
    """A standalone cluster may accept the driver yet grant no executor; wait, bounded."""
    if _LOCAL.match(master):
        return
    sc = spark.sparkContext
    deadline = time.monotonic() + connect_timeout
    while time.monotonic() < deadline:
        # the status tracker lists the driver too; more than one entry means an executor
        if sc._jsc.sc().getExecutorMemoryStatus().size() > 1:  # noqa: SLF001 - no public API
            return
        time.sleep(0.25)
    spark.stop()
    raise SparkUnavailable(
        f"Spark master {master} granted no executor within {connect_timeout:.0f} s "
        "(no worker registered, or not enough cores/memory)")


def get_session(master: str | None = None, *, app_name: str = "lance-conformance",
                connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, conf: dict | None = None):
    """A SparkSession on ``master`` (``local[*]`` by default), loopback only, no UI.

    Raises :class:`SparkUnavailable` when PySpark cannot be imported or the master does not
    answer within ``connect_timeout`` seconds."""
    master = master or DEFAULT_MASTER
    check_master(master, connect_timeout)
    configure_environment()
    try:
        from pyspark.sql import SparkSession
    except Exception as exc:  # ImportError, or a broken install
        raise SparkUnavailable(f"pyspark cannot be imported: {exc!r}") from None

    current = SparkSession.getActiveSession()
    if current is not None and current.sparkContext.master != master:
        current.stop()
    builder = (
        SparkSession.builder.master(master).appName(app_name)
        .config("spark.driver.host", LOOPBACK)
        .config("spark.driver.bindAddress", LOOPBACK)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config("spark.executorEnv.SPARK_LOCAL_IP", LOOPBACK)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # a dead executor or task fails the job quickly instead of being retried for minutes
        .config("spark.task.maxFailures", "1")
        .config("spark.stage.maxConsecutiveAttempts", "1")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, str(value))
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - Py4J/JVM start failures, all reported alike
        raise SparkUnavailable(f"cannot start a Spark session on {master}: "
                               f"{type(exc).__name__}: {exc}") from None
    spark.sparkContext.setLogLevel("ERROR")
    _wait_for_executor(spark, master, connect_timeout)
    return spark


def stop_session() -> None:
    """Stop the active session of this process, if any."""
    try:
        from pyspark.sql import SparkSession
    except Exception:  # noqa: BLE001
        return
    current = SparkSession.getActiveSession()
    if current is not None:
        current.stop()
