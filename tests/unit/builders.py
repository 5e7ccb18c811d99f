"""Builders of the records unit tests describe groups with: one place per record, defaults that say
"an ordinary member of an ordinary group", so a test spells only the facts it is about."""

from __future__ import annotations

from kafka_coop.inspection import BrokerFacts, Fact


def declared_broker(
    version: str | None = "4.1",
    *,
    migration_policy: str | None = None,
    rebalance_protocols: tuple[str, ...] | None = None,
) -> BrokerFacts:
    """A broker as a fleet file declares it (every value `declared`)."""
    return BrokerFacts(
        kafka_version=Fact(value=version, source="declared")
        if version
        else Fact(value="unknown", source="unknown"),
        migration_policy=migration_policy,
        rebalance_protocols=rebalance_protocols,
    )


KIP848_BROKER = declared_broker(
    "4.1", migration_policy="bidirectional", rebalance_protocols=("classic", "consumer")
)
"""A 4.1 broker that serves both group protocols and converts groups either way."""
