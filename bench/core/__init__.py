"""The ground floor: messages and usage (`types`), token counting (`tokens`) and the text
markers both the harness and the simulated model read (`render`). It imports nothing from
the rest of `bench`, so `strategies` and `tasks` may lean on it."""
