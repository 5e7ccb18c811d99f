"""The repository's own test bed, beside the shipped sandbox: what tests and benchmarks need and a
user's `pip install` does not (the wheel leaves this package out). Every member program a test or a
benchmark starts lives here; the launchers that start many at once stay with their callers.

- `testbed.interop`: members of the other client families (kafka-python, aiokafka, franz-go, sarama,
  confluent-kafka-go, KafkaJS), built from the package's go/, node/ and python/ sources; pass
  `member_command` to `MemberProcesses(families=...)`.
- `testbed.foreign_member`: a classic member whose group metadata is written byte for byte.
- CoopConsumer member programs: `service_member` (service-shaped, for the bounce benchmarks),
  `chaos_member` and `close_soak_member` (one benchmark each), `freeze_member`, `interrupt_member` and
  `unpolled_member` (the consumer's integration tests), with `rebalance_protocols`, the settings that
  choose each protocol.
- `testbed.faults`: network faults through toxiproxy (`Toxiproxy`, `NetworkFaults`).
"""
