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


def ceil_pool() -> Workload:
    """One ceil-mode max pooling: inductor guards a dynamic size's parity while it lowers (a
    pooled size that ceil mode leaves unchanged drops the mode), so an even size after an odd
    one compiles again under inductor and hits under aot_eager."""

    def build():
        def pool(x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.max_pool2d(x, 2, 2, ceil_mode=True)

        return pool

    return Workload(name="ceil-pool", build=build, make_inputs=lambda s: (torch.randn(1, 2, s["n"], s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 9, 10, 11, 12, 9, 8)))
