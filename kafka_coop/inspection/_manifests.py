"""Reading the manifest topic (shell): the reader lives in kafka_coop.manifest, beside the publisher, so
the consumer's duplicate-id check reads a holder's manifest too; inspection uses it from here."""

from __future__ import annotations

from kafka_coop.manifest import MANIFEST_READ_TIMEOUT_S, ReadToEnd, read_manifest_keys, read_manifests

__all__ = ["MANIFEST_READ_TIMEOUT_S", "ReadToEnd", "read_manifest_keys", "read_manifests"]
