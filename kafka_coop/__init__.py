"""kafka-coop: safe, visible, measured consumer-group rebalancing for confluent-kafka fleets."""

__version__ = "0.1.0"
