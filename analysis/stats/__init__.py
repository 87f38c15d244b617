"""Stats: the tests and intervals the report rests on (`inference.py`). Ground floor: imports no
other room."""
