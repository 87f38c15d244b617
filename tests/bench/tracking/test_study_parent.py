"""What a worker asks the store once per process (bench/tracking/runs.py): a study's parent run
(`study_run_id`) and an experiment's id (`known_experiment`): every later trial gets the same
answer without a query."""

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


class CountingLookups(Counting):
    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.lookups = 0

    def __getattr__(self, name: str):
        if name == "get_experiment_by_name":
            self.lookups += 1
        return super().__getattr__(name)


def test_an_experiment_is_looked_up_once_it_exists(tmp_path) -> None:
    client = CountingLookups(f"sqlite:///{tmp_path}/mlflow.db")
    assert runs.known_experiment(client, "e") is None  # none yet: asked again next time
    assert runs.known_experiment(client, "e") is None and client.lookups == 2
    made = runs.experiment_id(client, "e", "")
    assert [runs.experiment_id(client, "e", "") for _ in range(3)] == [made] * 3
    assert runs.known_experiment(client, "e") == made and client.lookups == 3
    elsewhere = CountingLookups(f"sqlite:///{tmp_path}/other.db")  # another store: its own
    assert runs.known_experiment(elsewhere, "e") is None and elsewhere.lookups == 1
    assert runs.experiment_id(elsewhere, "e", "") and elsewhere.lookups == 2


def test_a_client_with_no_address_is_asked_every_time(tmp_path) -> None:
    client = CountingLookups(f"sqlite:///{tmp_path}/mlflow.db")
    made = client.create_experiment("e")
    nameless = type(
        "Nameless", (), {"get_experiment_by_name": lambda self, n: client.get_experiment_by_name(n)}
    )()
    assert [runs.known_experiment(nameless, "e") for _ in range(2)] == [made, made] and client.lookups == 2
