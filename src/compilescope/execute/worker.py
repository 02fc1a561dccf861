"""Worker entry: ``python -m compilescope.execute.worker SPEC.json RESULT.json``.

Runs one trial in this fresh process and writes its records as JSON. The parent sets the
compile-cache directory in the environment before this process imports torch.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    spec_path, result_path = argv
    launched = float(os.environ.get("COMPILESCOPE_LAUNCHED_AT", time.time()))
    import dataclasses

    import torch  # noqa: F401  (timed: import cost is reported apart from the first call)

    imported = time.time()
    from ..model import TrialSpec
    from ..schema import from_data, to_data
    from .trial import run_trial

    with open(spec_path) as fh:
        spec = from_data(TrialSpec, json.load(fh))
    save = os.environ.get("COMPILESCOPE_SAVE_ARTIFACTS")
    load = os.environ.get("COMPILESCOPE_LOAD_ARTIFACTS")
    result = run_trial(
        spec, save_artifacts=Path(save) if save else None, load_artifacts=Path(load) if load else None
    )
    result = dataclasses.replace(result, import_s=imported - launched, process_s=time.time() - launched)
    tmp = result_path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(to_data(result), fh)
    os.replace(tmp, result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
