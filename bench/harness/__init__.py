"""What more than one benchmark needs, beyond the shipped test bed (kafka_coop.sandbox): brokers set up
for measuring, the group coordinator's clock, service-shaped members, many real groups at once, other
JVMs for the Java member, the rolling scenario runner and the figures of its runs.

A benchmark module imports from here (and from bench/_common.py), never from another benchmark.
"""
