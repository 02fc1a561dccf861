"""Worker entry: ``python -m compilescope.execute.worker FD``, the task as JSON on stdin.

Runs one trial in this fresh process. Each finished stream call is written to file
descriptor FD as one JSON line the moment it finishes (``{"call": …, "compiles": […],
"graph_breaks": […]}``), then the whole result (``{"result": …, "artifacts": base64}``), so a
trial that dies mid-stream still gives its parent every call it completed. The compile
cache directory is set from the task before torch is imported.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time


def main(argv: list[str]) -> int:
    fd = int(argv[0])
    out = os.fdopen(fd, "w", buffering=1)
    text = sys.stdin.read()
    data = json.loads(text)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(data["cache_dir"])
    threads = (data.get("spec") or {}).get("measure", {}).get("threads")
    if threads:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    launched = float(data.get("launched_at") or time.time())
    import dataclasses

    import torch  # noqa: F401  (timed: import cost is reported apart from the first call)

    imported = time.time()
    from ..schema import to_data
    from .task import TrialTask
    from .trial import run_trial

    task = TrialTask.from_json(text)

    def sink(call, compiles, breaks):  # type: ignore[no-untyped-def]
        out.write(json.dumps({"call": to_data(call), "compiles": to_data(compiles), "graph_breaks": to_data(breaks)}) + "\n")

    result, artifacts = run_trial(
        task.spec, save_artifacts=task.save_artifacts, load_artifacts=task.load_artifacts, sink=sink
    )
    result = dataclasses.replace(result, import_s=imported - launched, process_s=time.time() - launched)
    blob = None if artifacts is None else base64.b64encode(artifacts).decode()
    out.write(json.dumps({"result": to_data(result), "artifacts": blob}) + "\n")
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
