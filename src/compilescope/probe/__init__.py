"""probe: explain every compile, recompile and graph break of an unmodified program."""
