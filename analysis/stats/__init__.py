"""Stats: the tests and intervals the report rests on (`tests.py`). Ground floor: imports no
other room."""
