"""A workload for the forecast tests: its eager path reads a tensor value, which the meta
device cannot, while the code Dynamo traces does not."""

from __future__ import annotations

import torch

from compilescope import Workload


def _build():
    def checked(x: torch.Tensor) -> torch.Tensor:
        if not torch.compiler.is_compiling():  # eager only: e.g. a validation a library runs
            assert x.abs().sum().item() >= 0
        return x.sin() + x.cos()

    return checked


def eager_reads_values() -> Workload:
    return Workload(name="eager-reads-values", build=_build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in range(8, 120, 8)))
