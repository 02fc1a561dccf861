"""The application layer: one use case per command, each a function that does the command's
work and returns its report — the CLI (:mod:`compilescope.cli`) parses options, calls it and
renders what it returns; :mod:`compilescope.api` offers the same functions to Python.

A use case takes a :class:`~compilescope.app.progress.Progress`, told what runs while it runs
(the trial, its phase, request i/N) and the lines the user reads; it writes nothing to the
terminal itself. Modules: :mod:`.run` (run, resume, and the engine ``execute_run``),
:mod:`.demo`, :mod:`.advise` (a workload, and an unmodified script).
"""
