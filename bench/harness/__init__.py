"""What more than one benchmark needs, beyond the shipped test bed (kafka_coop.sandbox): brokers set up
for measuring, the frame every benchmark runs in (`frame`: arguments, result model and files, machine and
versions), the group coordinator's clock, service-shaped members, the pipeline's feed, the rolling
scenario runner and the figures of its runs. The member programs they start are the test bed's
(testbed/).

A benchmark module imports from here, never from another benchmark.
"""
