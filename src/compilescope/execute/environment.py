"""The environment a trial's process gets: built explicitly, never the driver's whole one.

A trial process receives three kinds of variables and nothing else:

* **What a process needs** (:data:`PASSED`, :data:`PASSED_PREFIXES`): ``PATH``, ``HOME``,
  temporary directories, locale, ``PYTHONPATH`` and the other ``PYTHON*`` settings, the
  virtual environment, the dynamic loader's and the C/C++ compiler's paths and flags (Inductor
  compiles C++), proxies and certificates, Hugging Face's cache and offline settings, and
  ``COMPILESCOPE_*``. Passed unchanged, not recorded.
* **compilescope's own**: ``TORCHINDUCTOR_CACHE_DIR`` (the trial's cache directory, set by the
  worker from its task) and ``OMP_NUM_THREADS`` (``--threads``), recorded as
  :attr:`TrialEnv.cache_dir` and :attr:`TrialEnv.threads`. A user's ``TRITON_CACHE_DIR`` is
  dropped: a cold trial never starts on a cache compilescope does not own.
* **What changes what PyTorch does** (:data:`RECORDED`, :data:`RECORDED_PREFIXES`):
  ``TORCH_*``, ``TORCHINDUCTOR_*``, ``TORCHDYNAMO_*``, ``PYTORCH_*``, ``TRITON_*``, the OpenMP
  / MKL / oneDNN / BLAS threading variables, the CUDA/ROCm device selection, ``LD_PRELOAD``
  (an allocator), and the names listed in ``COMPILESCOPE_PASS_ENV`` (comma-separated: the
  variables a workload reads itself). Inherited **and** recorded in the trial's
  :attr:`TrialEnv.variables`, so a stray one is visible in the results and ``compare`` warns
  when two runs differ in them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

PASSED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TEMP", "TMP", "TZ", "LANG", "LANGUAGE", "TERM",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_ROOT",
    "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
    "PKG_CONFIG_PATH", "CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS",
    "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "TOKENIZERS_PARALLELISM", "TRANSFORMERS_OFFLINE", "TRANSFORMERS_CACHE",
    "SYSTEMROOT", "COMSPEC", "PATHEXT", "WINDIR",
})
PASSED_PREFIXES = ("LC_", "PYTHON", "COMPILESCOPE_", "HF_", "ROCM_PATH")
RECORDED = frozenset({"LD_PRELOAD", "MALLOC_CONF", "NVIDIA_TF32_OVERRIDE", "CUBLAS_WORKSPACE_CONFIG"})
RECORDED_PREFIXES = (
    "TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "TORCHELASTIC_", "PYTORCH_", "TRITON_", "INDUCTOR_",
    "OMP_", "KMP_", "GOMP_", "MKL_", "DNNL_", "ONEDNN_", "OPENBLAS_", "VECLIB_", "NUMEXPR_",
    "CUDA_", "CUDNN_", "NCCL_", "HIP_", "ROCR_", "HSA_", "ZE_",
)
OWN = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")  # compilescope's, never inherited
PASS_ENV = "COMPILESCOPE_PASS_ENV"


def _named(environ: Mapping[str, str]) -> frozenset[str]:
    return frozenset(n.strip() for n in environ.get(PASS_ENV, "").split(",") if n.strip())


def is_recorded(name: str, environ: Mapping[str, str] = os.environ) -> bool:
    """A variable that changes what PyTorch (or the workload) does: inherited and recorded."""
    if name in OWN:
        return False
    return name in RECORDED or name.startswith(RECORDED_PREFIXES) or name in _named(environ)


def recorded_variables(environ: Mapping[str, str], threads: int | None) -> dict[str, str]:
    """The variables of ``environ`` a trial records (sorted by name): the recorded kinds, less
    compilescope's own (its cache directory; ``OMP_NUM_THREADS`` when ``threads`` set it)."""
    own = set(OWN) | ({"OMP_NUM_THREADS"} if threads is not None else set())
    return {k: environ[k] for k in sorted(environ) if k not in own and is_recorded(k, environ)}


def worker_environment(threads: int | None, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment of a trial's process, from the driver's ``environ``: what a process
    needs, the recorded variables, and ``OMP_NUM_THREADS`` for ``threads``. The cache directory
    is not in it: it is the task's, set by the worker before anything reads it."""
    env = {k: v for k, v in environ.items()
           if k not in OWN and (k in PASSED or k.startswith(PASSED_PREFIXES) or is_recorded(k, environ))}
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def load_average() -> float | None:
    """The machine's one-minute load average (``os.getloadavg``), None where unreadable."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def usable_cpus() -> int | None:
    """The CPUs this process may run on (its affinity), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        return os.cpu_count()


def cpu_frequency() -> tuple[str, float | None]:
    """The first usable CPU's frequency governor and current frequency in MHz, where the
    kernel shows them (``/sys/devices/system/cpu/cpuN/cpufreq``); ("", None) elsewhere."""
    try:
        cpu = min(os.sched_getaffinity(0))
    except (OSError, AttributeError, ValueError):
        cpu = 0
    base = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/"

    def read(name: str) -> str:
        try:
            with open(base + name, encoding="ascii", errors="replace") as fh:
                return fh.read(64).strip()
        except OSError:
            return ""

    khz = read("scaling_cur_freq")
    return read("scaling_governor"), round(int(khz) / 1000, 1) if khz.isdigit() else None
