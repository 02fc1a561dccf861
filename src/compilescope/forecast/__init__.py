"""Forecast what ``torch.compile`` will do on a stream before running it: by a dry run of
Dynamo on fake tensors of the real device (:func:`forecast`), or from the guards a results file recorded
(:func:`forecast_recorded`), compared with :func:`compare_forecasts`."""

from .engine import forecast, request_outcomes
from .recorded import compare_forecasts, forecast_recorded
from ..report.forecast import Agreement, ForecastReport, ForecastRequest, ForecastGuard, StrategyForecast

__all__ = ["forecast", "forecast_recorded", "compare_forecasts", "request_outcomes", "Agreement", "ForecastReport",
           "ForecastRequest", "ForecastGuard", "StrategyForecast"]
