"""What the task families share: names and filler code (`build`), edits over perceived text,
and the fast test runner shipped in every generated repository (`runner`)."""
