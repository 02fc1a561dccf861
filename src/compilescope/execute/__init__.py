"""Execution: one trial in-process (:mod:`.trial`), trials in fresh processes (:mod:`.local`)."""
