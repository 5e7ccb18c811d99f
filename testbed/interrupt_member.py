"""A drop-in CoopConsumer service in its own process, for tests that stop it with Ctrl-C (SIGINT).

`python -m testbed.interrupt_member BOOTSTRAP GROUP TOPIC REBALANCE OUT` processes
records slowly, appending `<partition> <offset>` to OUT once each is processed, with librdkafka's
defaults and no marks or commits of its own (what it polled past is done). SIGINT raises
KeyboardInterrupt wherever the loop is, inside `poll` included; the `with` block closes the consumer.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from testbed.rebalance_protocols import REBALANCE_CONF


def main(argv: list[str]) -> int:
    bootstrap, group, topic, rebalance, out = argv
    # Ctrl-C as a service run from a terminal gets it. A shell without job control starts background
    # jobs with SIGINT ignored (how CI runners and `cmd &` in scripts launch), the test's pytest
    # inherits that, and Python keeps an ignored SIGINT ignored: the SIGINT would never arrive.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from kafka_coop import CoopConsumer

    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        **REBALANCE_CONF[rebalance],
    }
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        # handle_signals=False: Python's own Ctrl-C (KeyboardInterrupt in the middle), the path under test;
        # the block's own handler stops at the next poll instead (tests/install/test_readme_service.py).
        with CoopConsumer(conf, handle_signals=False) as consumer:
            consumer.subscribe([topic])
            while True:
                msg = consumer.poll(1.0)
                if msg is None or msg.error():
                    continue
                time.sleep(0.01)  # processing
                os.write(fd, f"{msg.partition()} {msg.offset()}\n".encode())
    except KeyboardInterrupt:
        return 130
    finally:
        os.close(fd)
    return 0  # reached only if the consumer's block swallowed what ended the loop


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
