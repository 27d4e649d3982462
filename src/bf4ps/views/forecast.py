"""The capacity forecast the read side shows: the model lives in bf4ps.capacity (pure
functions over typed inputs); this module names what `bf4ps forecast`, the console and the
scheduler's check use. The inputs are read by views/forecast_inputs.py."""

from __future__ import annotations

from bf4ps.capacity.demand import DemandLine, demand, refresh_per_hour, span
from bf4ps.capacity.forecast import Age, Completion, Forecast, Served, forecast
from bf4ps.capacity.gates import Capacity, capacity
from bf4ps.capacity.inputs import (
    DAY,
    HOUR,
    RESOURCES,
    Egress,
    Figure,
    Inputs,
    Population,
    Queued,
    ResourceCost,
)

__all__ = ["DAY", "HOUR", "RESOURCES", "Age", "Capacity", "Completion", "DemandLine", "Egress",
           "Figure", "Forecast", "Inputs", "Population", "Queued", "ResourceCost", "Served",
           "capacity", "demand", "forecast", "refresh_per_hour", "span"]
