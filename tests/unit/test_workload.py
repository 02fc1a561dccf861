from __future__ import annotations

import sys
import textwrap

import pytest
import torch

from compilescope.analysis.numerics import flatten_outputs
from compilescope.errors import WorkloadError
from compilescope.workload import BUILTINS, bind_arguments, build_target, load_workload, seeded_inputs
from compilescope.model import call_arguments

WORKLOAD_FILE = textwrap.dedent(
    """
    import torch
    from compilescope import Workload

    def make():
        return Workload(
            name="double",
            build=lambda: (lambda x, scale=2.0: x * scale),
            make_inputs=lambda s: (torch.randn(s["n"]),),
            dims=("n",),
            default_stream=({"n": 4}, {"n": 8}),
        )

    instance = make()
    not_a_workload = 42

    def broken_factory():
        raise RuntimeError("no weights here")

    def wrong_type():
        return "nope"

    def raises_in_build():
        w = make()
        import dataclasses
        def build():
            raise ValueError("bad config")
        return dataclasses.replace(w, build=build)
    """
)


@pytest.fixture
def workload_file(tmp_path):
    path = tmp_path / "my_workloads.py"
    path.write_text(WORKLOAD_FILE)
    return path


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtins_build_and_run_their_default_stream(name):
    w = load_workload(name)
    target = build_target(w)
    with torch.set_grad_enabled(w.grad):
        for shape in w.default_stream[:2]:
            args, kwargs = call_arguments(seeded_inputs(w, shape))
            out = w.step(target, *args, **kwargs) if w.step else target(*args, **kwargs)
            leaves = [v for _, v in flatten_outputs(out) if torch.is_tensor(v)]
            assert leaves and all(bool(torch.isfinite(v).all()) for v in leaves)
    assert w.ref == name and w.description


def test_inputs_are_reproducible_per_shape():
    w = load_workload("sincos")
    (a,) = seeded_inputs(w, {"n": 16})
    (b,) = seeded_inputs(w, {"n": 16})
    (c,) = seeded_inputs(w, {"n": 17})
    assert torch.equal(a, b) and not torch.equal(a[:16], c[:16])


def test_file_reference_instance_and_factory(workload_file):
    for name in ("instance", "make"):
        w = load_workload(f"{workload_file}:{name}")
        assert w.name == "double" and w.ref == f"{workload_file.resolve()}:{name}"


def test_module_reference(workload_file, monkeypatch):
    monkeypatch.syspath_prepend(str(workload_file.parent))
    w = load_workload("my_workloads:make")
    assert w.name == "double"
    sys.modules.pop("my_workloads", None)


@pytest.mark.parametrize(
    "suffix, message",
    [
        (":nothing", "has no attribute 'nothing'"),
        (":not_a_workload", "neither a Workload nor a factory"),
        (":broken_factory", "raised RuntimeError: no weights here"),
        (":wrong_type", "returned str"),
    ],
)
def test_bad_references(workload_file, suffix, message):
    with pytest.raises(WorkloadError, match=message):
        load_workload(f"{workload_file}{suffix}")


def test_unknown_and_missing():
    with pytest.raises(WorkloadError, match="unknown workload 'nope'"):
        load_workload("nope")
    with pytest.raises(WorkloadError, match="does not exist"):
        load_workload("missing_file.py:x")
    with pytest.raises(WorkloadError, match="cannot import module"):
        load_workload("no_such_module_xyz:x")


def test_build_error_is_a_workload_error(workload_file):
    w = load_workload(f"{workload_file}:raises_in_build")
    with pytest.raises(WorkloadError, match="raised while building: ValueError: bad config"):
        build_target(w)


def test_bind_arguments_names_module_inputs():
    module = torch.nn.Linear(2, 2)
    x = torch.ones(1, 2)
    assert bind_arguments(module, (x,), {}) == {"input": x}
    assert set(bind_arguments(lambda x, scale=2.0: x, (x,), {"scale": 3.0})) == {"x", "scale"}


@pytest.mark.processes
def test_a_workload_files_module_is_named_alike_in_every_process(tmp_path):
    """A type defined in a workload file is named in a recording's guards by its module; the
    process that forecasts from the recording must name it alike, whatever its hash seed."""
    import os
    import subprocess

    (tmp_path / "w.py").write_text("class Box:\n    pass\n")
    code = ("from compilescope.workload import _import_file; from pathlib import Path; "
            f"print(_import_file(Path({str(tmp_path / 'w.py')!r})).__name__)")
    names = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env=dict(os.environ, PYTHONHASHSEED=seed)).stdout for seed in ("1", "2")}
    assert len(names) == 1, names
