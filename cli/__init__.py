"""The `kafka-coop` command line: parse, call the library, render (installed as kafka_coop.cli)."""
