"""The script-advice report (``advise --script``): the script as it is and under each
setting-only proposal, each run measured (made by :mod:`compilescope.script_advise`)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

# settings a script run can take without a code change: name → what it patches
SETTINGS = {
    "dynamic_sources": "torch.compiler.config.dynamic_sources",
    "recompile_limit": "torch._dynamo.config.recompile_limit",
    "automatic_dynamic_shapes": "torch._dynamo.config.automatic_dynamic_shapes",
    "assume_static_by_default": "torch._dynamo.config.assume_static_by_default",
}


def _setting(name: str) -> str:
    """Where a setting lives: ``inductor.NAME`` in inductor's config, any other in Dynamo's."""
    if name.startswith("inductor."):
        return "torch._inductor.config." + name.removeprefix("inductor.")
    return SETTINGS.get(name, "torch._dynamo.config." + name)


@dataclass(frozen=True)
class ScriptProposal:
    name: str
    settings: dict[str, Any]
    addresses: str
    target: Literal["compiles", "refused"] = "compiles"

    @property
    def env(self) -> str:
        """The environment variables that apply every setting without a code change, or ''."""
        if set(self.settings) == {"dynamic_sources"}:
            return "TORCH_COMPILE_DYNAMIC_SOURCES=" + shlex.quote(str(self.settings["dynamic_sources"]))
        return ""

    @property
    def code(self) -> str:
        return "; ".join(f"{_setting(k)} = {v!r}" for k, v in self.settings.items())


@dataclass(frozen=True)
class ScriptRun:
    label: str
    proposal: ScriptProposal | None
    exit_code: int
    error: str | None
    compiles: int
    recompiles: int
    refused: int
    failed: int
    compile_s: float
    wall_s: float
    verdict: Literal["baseline", "recommended", "accepted", "rejected"] = "baseline"
    why: str = ""


@dataclass(frozen=True)
class ScriptAdvice:
    command: str
    rows: tuple[ScriptRun, ...]
    code_fixes: tuple[tuple[str, str], ...] = field(default=())
    recommendation: ScriptRun | None = None
