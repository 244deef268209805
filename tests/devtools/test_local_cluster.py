"""The pieces the local-cluster tests and the chaos script stand on: the cluster's settings, its private
Spark home, and finding a job's processes through /proc."""
import os
import subprocess
import sys

import pytest

from devtools import processes
from devtools.local_spark import CLUSTER_MASTER, cluster_conf, job_command, log_tail, private_spark_home


def test_a_cluster_master_sets_the_cores_to_wait_for_and_loopback_for_the_driver():
    conf = cluster_conf("local-cluster[3, 2, 512]")
    assert conf["spark.cores.max"] == "6" and conf["spark.scheduler.minRegisteredResourcesRatio"] == "1.0"
    assert conf["spark.driver.host"] == "127.0.0.1"
    cmd = job_command("--x", master=CLUSTER_MASTER)
    assert cmd[cmd.index("--master") + 1] == CLUSTER_MASTER and "spark.cores.max=2" in cmd
    assert not [a for a in job_command("--x") if a.startswith("spark.cores.max")]  # local mode: untouched
    with pytest.raises(ValueError, match=r"local-cluster\[2,1,1024\]"):
        cluster_conf("local[2]")


def test_the_private_spark_home_links_everything_but_its_own_work_folder(tmp_path):
    home = tmp_path / "pyspark"
    for name in ("bin", "jars", "work"):
        (home / name).mkdir(parents=True)
    private = private_spark_home(tmp_path / "run", home)
    assert (private / "bin").resolve() == home / "bin" and (private / "jars").is_symlink()
    assert (private / "work").is_dir() and not (private / "work").is_symlink()
    assert private_spark_home(tmp_path / "run", home) == private  # again: nothing to do


def test_a_job_s_processes_are_found_by_its_process_group():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        assert processes.group(child.pid) == [child.pid] and processes.parent(child.pid) == os.getpid()
        assert processes.alive(child.pid) and processes.executor_of(child.pid) is None
        assert processes.executor_jvms(child.pid) == [] and processes.python_workers(child.pid) == []
    finally:
        child.kill()
        child.wait()
    assert not processes.alive(child.pid) and processes.group(child.pid) == []


def test_a_failed_run_s_message_carries_the_end_of_its_log(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("".join(f"line {i}\n" for i in range(40)) + "[job] error: the query failed\n")
    tail = log_tail(log, lines=3).splitlines()
    assert tail == ["    line 38", "    line 39", "    [job] error: the query failed"]
    assert "cannot be read" in log_tail(tmp_path / "gone.log")
