"""The kafka-coop consumers: one rebalance handler, one driver base, two drivers.

`CoopConsumer` (over `confluent_kafka.Consumer`) is imported here; `CoopAIOConsumer` (asyncio) on first
use, so a sync service does not load asyncio machinery. The hooks' contract is `RebalanceListener`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_coop.consumer._listener import RebalanceListener
from kafka_coop.consumer._sync import CoopConsumer

if TYPE_CHECKING:
    from kafka_coop.consumer._aio import CoopAIOConsumer

__all__ = ["CoopAIOConsumer", "CoopConsumer", "RebalanceListener"]


def __getattr__(name: str) -> Any:
    if name == "CoopAIOConsumer":
        from kafka_coop.consumer._aio import CoopAIOConsumer

        return CoopAIOConsumer
    raise AttributeError(f"module 'kafka_coop.consumer' has no attribute {name!r}")
