"""Plan the start-up calls that keep compiles off the request path, use the plan in a
service, and prove it by replay."""

from .planfile import StrategyPlan, Uncovered, WarmupPlan, load_plan, loads_plan, save_plan

__all__ = ["StrategyPlan", "Uncovered", "WarmupPlan", "load_plan", "loads_plan", "save_plan"]
