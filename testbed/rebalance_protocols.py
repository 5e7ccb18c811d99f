"""The consumer settings that choose each rebalance protocol the consumer tests run, in-process members
and member programs alike: one table, so a test and the program it starts speak the same protocol."""

from __future__ import annotations

REBALANCE_CONF: dict[str, dict[str, str]] = {
    "eager-range": {"partition.assignment.strategy": "range"},
    "cooperative-sticky": {"partition.assignment.strategy": "cooperative-sticky"},
    "consumer": {"group.protocol": "consumer"},
}
