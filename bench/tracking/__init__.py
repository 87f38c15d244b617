"""MLflow: a trial's run (`runs`), its traces (`tracing`) and a study's parent run
(`study_records`)."""
