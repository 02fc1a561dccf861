"""What recording a call costs when an argument is an object holding tensors: a Hugging Face
``DynamicCache`` of 2 and of 32 layers (each layer's keys and values, 10 cached tokens).

    python benchmarks/record_object_arguments.py [--calls 2000]

Times, in CPU time of this process, what ``watch(record_shapes=…)`` does per call to read the
arguments of a decode step (``input_ids`` and the cache: the walk into the object, its
tensors' sizes and its plain values, bounded by ``RECORD_DEPTH``/``RECORD_LEAVES``), beside
the same read of a call with ``input_ids`` alone. Needs the ``models`` extra.
"""

from __future__ import annotations

import argparse
import time

import torch

from _common import write
from compilescope.shapes_record import _item
from compilescope.zoo import causal_lm_config


def per_call(args: tuple, calls: int) -> float:
    tensor = torch.Tensor
    for a in args:  # the first read decides each type's walk once
        _item(a, tensor)
    start = time.process_time()
    for _ in range(calls):
        for a in args:
            _item(a, tensor)
    return (time.process_time() - start) / calls


def main() -> None:
    from transformers import DynamicCache

    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    ids = torch.zeros(1, 1, dtype=torch.long)
    data = {"input_ids alone": per_call((ids,), args.calls)}
    for layers in (2, 32):
        config = causal_lm_config()
        config.num_hidden_layers = layers
        cache = DynamicCache(config=config)
        for i in range(layers):
            cache.update(torch.randn(1, 2, 10, 16), torch.randn(1, 2, 10, 16), i)
        data[f"input_ids and a {layers}-layer DynamicCache"] = per_call((ids, cache), args.calls)
    for name, seconds in data.items():
        print(f"{name}: {seconds * 1e6:.1f} µs CPU per call")
    write("record_object_arguments", {k: v for k, v in data.items()})


if __name__ == "__main__":
    main()
