"""Rebalance analytics over RebalanceEvent streams (pure-Python reference engine; Spark behind an extra)."""

from kafka_coop.analytics._intervals import Interval, unavailability, unavailable_ms

__all__ = ["Interval", "unavailability", "unavailable_ms"]
