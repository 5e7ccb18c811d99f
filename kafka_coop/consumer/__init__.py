"""The kafka-coop consumers: one rebalance handler (`_handler`), two drivers.

`CoopConsumer` (`_sync`, over `confluent_kafka.Consumer`) is imported here; the asyncio driver lives in
`_aio`. The hooks' contract is `RebalanceListener`.
"""

from kafka_coop.consumer._handler import RebalanceHandler, RebalanceListener
from kafka_coop.consumer._sync import CoopConsumer

__all__ = ["CoopConsumer", "RebalanceHandler", "RebalanceListener"]
