"""A study's parent run is asked of the store once per process (bench/tracking/runs.py
`study_run_id`): every later trial of the worker gets the same id without a search."""

from __future__ import annotations

from mlflow.tracking import MlflowClient

from bench.tracking import runs


class Counting:
    """The real client, counting the searches that reach the store."""

    def __init__(self, uri: str) -> None:
        self._client, self.searches = MlflowClient(uri), 0

    def __getattr__(self, name: str):
        if name == "search_runs":
            self.searches += 1
        return getattr(self._client, name)


def test_one_search_per_study_per_process(tmp_path) -> None:
    client = Counting(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.create_experiment("e")
    first = runs.study_run_id(client, exp, "s", tmp_path)
    again = [runs.study_run_id(client, exp, "s", tmp_path) for _ in range(3)]
    assert again == [first] * 3 and client.searches == 1
    other = runs.study_run_id(client, exp, "t", tmp_path)  # another study: its own parent
    assert other != first and client.searches == 2
    found = client.search_runs([exp], filter_string="tags.`ctxbench.kind` = 'study' and tags.study = 's'")
    assert [r.info.run_id for r in found] == [first]
