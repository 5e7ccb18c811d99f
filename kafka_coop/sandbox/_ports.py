"""Free ports on loopback for sandbox listeners, chosen so a restarted node gets its port back."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

from kafka_coop.errors import ClusterUnavailable


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A free port for a listener, below the ephemeral range (`free_ports`: why a bind to port 0, which
    hands out an ephemeral port, is not good enough for a node that must get its port back)."""
    return free_ports(1)


def _ephemeral_low() -> int:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    return 32768


def free_ports(count: int = 1) -> int:
    """The first of `count` consecutive free ports *below* the kernel's ephemeral range.

    A node that is down while clients keep reconnecting to it must get its port back on restart: a
    port in the ephemeral range can meanwhile be taken as the source port of some connection (on
    loopback even by a connect to that very port: TCP simultaneous open, a socket connected to
    itself), and the restart fails with "Address already in use" (seen on a 3-node restart).
    """
    import random

    high = _ephemeral_low() - count
    for _ in range(500):
        first = random.randrange(10000, max(10001, high))  # noqa: S311  # a port, not a secret
        if all(port_is_free(first + i) for i in range(count)):
            return first
    raise ClusterUnavailable(f"Found no {count} consecutive free ports on 127.0.0.1.")
