"""kafka-coop benchmarks: `python -m bench [--only NAME]`; see bench/_common.py for the protocol."""
