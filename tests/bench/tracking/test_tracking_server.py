"""A shared tracking server (scripts/tracking_server.sh: `mlflow server`, PostgreSQL for runs,
artifacts served over HTTP): a 2-worker study logs every trial to it, the report is regenerated
from it alone, and what it wrote is really in PostgreSQL and the server's artifact root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.config import ROOT
from tests.helpers.studies import free_port, run_study, study_outcome

# Whole studies through subprocesses: minutes on a loaded 2-core machine, past the 300 s default.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

SCRIPT = ROOT / "scripts" / "tracking_server.sh"


@dataclass(frozen=True)
class Server:
    uri: str
    dir: Path
    pg_port: int

    def sql(self, query: str, *args: str) -> list[tuple]:
        import psycopg2

        password = (self.dir / "pg" / "password").read_text().strip()
        with (
            psycopg2.connect(
                host="127.0.0.1", port=self.pg_port, user="ctxbench", password=password, dbname="mlflow"
            ) as con,
            con.cursor() as cur,
        ):
            cur.execute(query, args)
            return cur.fetchall()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    # Not under pytest's tmp dir: that is mode 700, and the database runs as `postgres`.
    base = Path(tempfile.mkdtemp(prefix="ctxbench-tracking-", dir="/tmp"))
    base.chmod(0o755)
    port, pg_port = free_port(), free_port()
    env = {
        **os.environ,
        "TRACKING_DIR": str(base),
        "PORT": str(port),
        "PG_PORT": str(pg_port),
        "MLFLOW": str(Path(sys.executable).with_name("mlflow")),
    }
    start = subprocess.run([str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=280)
    try:
        assert start.returncode == 0, start.stdout + start.stderr
        uri = start.stdout.strip().splitlines()[-1]
        assert uri == f"http://127.0.0.1:{port}"
        yield Server(uri, base, pg_port)
    finally:
        subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


def test_a_two_worker_study_and_its_report_through_the_server(server: Server, tmp_path: Path, docker_ready):
    study = f"server-{uuid.uuid4().hex[:6]}"
    run_study(
        study,
        tmp_path,
        ["hydra.launcher.n_jobs=2", f"tracking.uri={server.uri}", "tracking.artifact_root=null"],
    )
    assert not (tmp_path / "mlflow.db").exists()  # nothing fell back to a local store
    got = study_outcome(server.uri, study)
    assert got.n_runs == 4 and Counter(t[1] for t in got.trials) == {"FINISHED": 4}
    assert got.parent_status == "FINISHED" and got.parent_counts["trials_done"] == 4

    # The runs are rows in PostgreSQL; the artifacts were uploaded to the server's own root.
    (n,) = server.sql(
        "select count(*) from runs r join tags t on t.run_uuid = r.run_uuid "
        "where t.key = 'study' and t.value = %s",
        study,
    )[0]
    assert n == 5  # 4 trials + the study's parent run
    from mlflow.tracking import MlflowClient

    client = MlflowClient(server.uri)
    exp = client.get_experiment_by_name("ctxbench")
    trial = client.search_runs(
        [exp.experiment_id], f"tags.study = '{study}' and tags.`ctxbench.kind` = 'trial'"
    )[0]
    assert trial.info.artifact_uri.startswith("mlflow-artifacts:/")
    assert list(server.dir.glob(f"artifacts/**/{trial.info.run_id}/artifacts/events.jsonl"))

    # The report, regenerated from the server alone, lands in the study's parent run.
    report = tmp_path / "report"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "analysis.report",
            f"tracking.uri={server.uri}",
            f"study={study}",
            f"report.dir={report}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 trials (2 strategies × 2 arms)" in proc.stdout and got.parent_run_id in proc.stdout
    assert (report / "index.html").stat().st_size > 0
    logged = {a.path for a in client.list_artifacts(got.parent_run_id, "report")}
    assert {"report/index.html", "report/index.md", "report/figures", "report/tables"} <= logged
    figures = {a.path for a in client.list_artifacts(got.parent_run_id, "report/figures")}
    assert "report/figures/success.png" in figures
