"""A Spark standalone cluster on loopback for tests: one master and N workers, each a JVM started with
the installed PySpark distribution's own `bin/spark-class` (Master / Worker main classes), nothing else
installed. Workers register with the master; `wait_ready` polls the master's JSON status page.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from kafka_coop.analytics._spark_jars import pyspark_dir
from kafka_coop.sandbox import free_port

READY_TIMEOUT_S = 180.0
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class StandaloneCluster:
    """`with StandaloneCluster(tmp, workers=2) as cluster: ... cluster.url` (spark://127.0.0.1:PORT)."""

    def __init__(self, work: Path, *, workers: int = 2, cores: int = 1, memory: str = "1536m") -> None:
        self.work = work
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []

    def _start(self, name: str, *args: str) -> None:
        home = pyspark_dir()
        env = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m",
            # the master and the workers only place and watch executors: C1 alone, one GC thread
            "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "SPARK_NO_DAEMONIZE": "1",
        }
        log = (self.work / f"{name}.log").open("wb")
        self.procs.append(
            subprocess.Popen(
                [str(home / "bin" / "spark-class"), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        )

    def __enter__(self) -> StandaloneCluster:
        self.work.mkdir(parents=True, exist_ok=True)
        self._start(
            "master",
            MASTER_CLASS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        )
        for n in range(self.workers):
            self._start(
                f"worker{n}",
                WORKER_CLASS,
                self.url,
                "--host",
                "127.0.0.1",
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(self.work / f"worker{n}"),
            )
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
            return dict(json.load(resp))

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        last: object = None
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited ({proc.returncode}); see {self.work}/*.log")
            try:
                status = self.status()
                if status.get("aliveworkers") == self.workers:
                    return
                last = status.get("aliveworkers")
            except OSError as exc:
                last = exc
            time.sleep(0.5)
        raise RuntimeError(
            f"{self.workers} workers did not register in {READY_TIMEOUT_S:.0f} s (last: {last})"
        )

    def executor_dirs(self) -> list[Path]:
        """Every executor directory the workers made (app-*/N): one per executor that ever ran."""
        return sorted(p for n in range(self.workers) for p in (self.work / f"worker{n}").glob("app-*/*"))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
