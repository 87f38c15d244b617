"""Report: the study report, the top floor. Everything computed (`analyse.py`), the report's
text in one place (`document.py`, with the comparison tables it formats in
`comparisons.py`), the figures (`plots.py`), the diff pages (`pages.py`), files and the
MLflow mirror (`build.py`); the command is `__main__.py`.

    python -m analysis.report [key=value ...]
"""
