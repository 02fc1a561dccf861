"""Forecast what ``torch.compile`` will do on a stream before running it."""

from .engine import forecast, request_outcomes
from ..report.forecast import ForecastReport, ForecastRequest, ForecastGuard, StrategyForecast

__all__ = ["forecast", "request_outcomes", "ForecastReport", "ForecastRequest", "ForecastGuard", "StrategyForecast"]
