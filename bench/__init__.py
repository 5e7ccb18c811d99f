"""kafka-coop benchmarks: `python -m bench [--only NAME]`; see bench/harness/frame.py for the protocol."""
