"""A helper module of a forecast test workload's (``workloads_forecast.keeps_a_table_elsewhere``):
a table it keeps for every caller, grown on demand, as a RoPE cache in a model's own package."""

from __future__ import annotations

import torch

TABLE = {"t": torch.zeros(4)}


def table(n: int) -> torch.Tensor:
    if n > TABLE["t"].shape[0]:
        TABLE["t"] = torch.arange(2 * n, dtype=torch.float32)
    return TABLE["t"][:n]
