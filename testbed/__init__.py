"""The repository's own test bed, beside the shipped sandbox: what tests and benchmarks need and a
user's `pip install` does not (the wheel leaves this package out).

- `testbed.interop`: members of the other client families (kafka-python, aiokafka, franz-go, sarama,
  confluent-kafka-go, KafkaJS), built from interop/; pass `member_command` to `MemberProcesses(families=...)`.
- `testbed.faults`: network faults through toxiproxy (`Toxiproxy`, `NetworkFaults`).
"""
