"""The ``htmlrag`` command line: ``clean``, ``tree``, ``prune`` (one question or a resumable ``--batch``),
``graph`` and ``serve``. A face over the library: argument parsing, printing and batch files, no logic of its
own; it builds rankers and pipelines through :mod:`htmlrag.factory`. Nothing here shapes a row of a run.
"""
