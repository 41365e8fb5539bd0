"""A real Spark standalone cluster (one master, one worker) from the installed pyspark.

The pip package of PySpark carries ``sbin/spark-daemon.sh`` and the jars of a full Spark
distribution, so ``SPARK_HOME`` is the package directory and the daemons start as::

    $SPARK_HOME/sbin/spark-daemon.sh start org.apache.spark.deploy.master.Master 1 \
        --host 127.0.0.1 --port P --webui-port W
    $SPARK_HOME/sbin/spark-daemon.sh start org.apache.spark.deploy.worker.Worker 1 \
        --host 127.0.0.1 --cores C --memory M --webui-port W2 spark://127.0.0.1:P

Everything the daemons write (logs, PID files, executor work directories) goes to one
temporary directory (``SPARK_LOG_DIR``, ``SPARK_PID_DIR``, ``SPARK_WORKER_DIR``), every
port is a free loopback port, and the worker's Python is this interpreter. The cluster is
ready when the worker's log says it registered with the master. :meth:`stop` ends exactly
the processes named by the PID files (SIGTERM, then SIGKILL after a grace period) and is
registered with ``atexit``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._process import HOST, ServerUnavailable, free_port

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> str:
    """The installed pyspark package directory (a complete SPARK_HOME)."""
    try:
        import pyspark
    except Exception as exc:  # noqa: BLE001
        raise ServerUnavailable(f"pyspark cannot be imported: {exc!r}") from None
    home = os.path.dirname(pyspark.__file__)
    if not os.path.exists(os.path.join(home, "sbin", "spark-daemon.sh")):
        raise ServerUnavailable(f"{home} has no sbin/spark-daemon.sh")
    return home


class SparkStandaloneCluster:
    """One standalone master and one worker on 127.0.0.1; ``master_url`` once started."""

    def __init__(self, *, cores: int = 2, memory: str = "2g", start_timeout: float = 90.0):
        self.cores = cores
        self.memory = memory
        self.start_timeout = start_timeout
        self.dir: Path | None = None
        self.port: int | None = None
        self.master_url: str | None = None
        self._ident = f"lance-conformance-{os.getpid()}-{time.monotonic_ns()}"

    # -- environment -----------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        assert self.dir is not None
        env = dict(os.environ)
        env.update(
            SPARK_HOME=spark_home(),
            SPARK_LOG_DIR=str(self.dir / "logs"),
            SPARK_PID_DIR=str(self.dir / "pids"),
            SPARK_WORKER_DIR=str(self.dir / "work"),
            SPARK_LOCAL_DIRS=str(self.dir / "local"),
            SPARK_IDENT_STRING=self._ident,
            SPARK_LOCAL_IP=HOST,
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
            SPARK_CONF_DIR=str(self.dir / "conf"),
        )
        return env

    def _daemon(self, action: str, cls: str, *args: str) -> None:
        script = os.path.join(spark_home(), "sbin", "spark-daemon.sh")
        proc = subprocess.run(["bash", script, action, cls, "1", *args], env=self._env(),
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise ServerUnavailable(f"spark-daemon.sh {action} {cls} failed "
                                    f"({proc.returncode}): {proc.stderr.strip()[-500:]}")

    def _log_text(self, cls: str) -> str:
        assert self.dir is not None
        out = []
        for p in sorted((self.dir / "logs").glob(f"*{cls}*.out")):
            with contextlib.suppress(OSError):
                out.append(p.read_text(errors="replace"))
        return "\n".join(out)

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> SparkStandaloneCluster:
        self.dir = Path(tempfile.mkdtemp(prefix="lance-spark-cluster-"))
        for sub in ("logs", "pids", "work", "local", "conf"):
            (self.dir / sub).mkdir()
        atexit.register(self.stop)
        self.port = free_port()
        self.master_url = f"spark://{HOST}:{self.port}"
        try:
            self._daemon("start", MASTER_CLASS, "--host", HOST, "--port", str(self.port),
                         "--webui-port", str(free_port()))
            self._daemon("start", WORKER_CLASS, "--host", HOST, "--cores", str(self.cores),
                         "--memory", self.memory, "--webui-port", str(free_port()),
                         self.master_url)
            self._wait_registered()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_registered(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if "Successfully registered with master" in self._log_text(WORKER_CLASS):
                return
            for pid in self.pids().values():
                if not _alive(pid):
                    raise ServerUnavailable(
                        "a Spark daemon exited during start-up:\n"
                        + (self._log_text(MASTER_CLASS) + self._log_text(WORKER_CLASS))[-2000:])
            time.sleep(0.25)
        raise ServerUnavailable(
            f"the Spark worker did not register within {self.start_timeout:.0f} s:\n"
            + self._log_text(WORKER_CLASS)[-2000:])

    def pids(self) -> dict[str, int]:
        """PID of each daemon, from the PID files ``spark-daemon.sh`` wrote."""
        out = {}
        if self.dir is None:
            return out
        for p in (self.dir / "pids").glob("*.pid"):
            with contextlib.suppress(OSError, ValueError):
                out[p.name] = int(p.read_text().strip())
        return out

    def stop(self, grace: float = 10.0) -> None:
        """End the master and worker by their PIDs and remove the temporary directory."""
        if self.dir is None:
            return
        pids = list(self.pids().values())
        # the worker first, so it does not try to reconnect to a vanished master
        for pid in sorted(pids, reverse=True):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.1)
        for pid in pids:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def __enter__(self) -> SparkStandaloneCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child counts as gone
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
