"""Network faults between members and the sandbox, made by Shopify's toxiproxy (v2), not by us.

`make setup` builds toxiproxy's server with `go install` into the jar cache (pinned version, below);
`Toxiproxy` runs it on loopback and drives its HTTP API. `NetworkFaults` puts one proxy in front of each
node's PROXIED listener (`Sandbox(proxied=True)`): that listener *advertises* the proxy's address, so a
member bootstrapped at `proxied_bootstrap` reaches every broker through its proxy, after metadata too
(a proxied bootstrap alone would only cover the first connection). Members bootstrapped at the normal
listener are untouched, which is how one member is cut from the cluster while the others keep going.

Faults: `cut()` is a `timeout` toxic with timeout 0 on both directions (data stops, connections stay
open, like a partition where packets are dropped, not refused); `latency(ms)` adds delay both ways;
`heal()` removes every toxic.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from kafka_coop._jvm import build_once, cache_dir
from kafka_coop.errors import ClusterUnavailable, InvalidInput
from kafka_coop.sandbox import Sandbox
from kafka_coop.sandbox.testing import free_ports

TOXIPROXY_VERSION = "v2.12.0"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
_BINARY = "server"  # what `go install .../cmd/server` names it
START_TIMEOUT_S = 20.0


def toxiproxy_path(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / f"toxiproxy-{TOXIPROXY_VERSION}" / _BINARY


def _go() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        raise InvalidInput(
            "Go was not found on PATH; the network faults build toxiproxy with `go install`.",
            hint="Install Go 1.22+ (e.g. `apt-get install golang-go`) and run `make setup` again.",
        )
    return go


def ensure_toxiproxy(cache: Path | None = None) -> Path:
    """The toxiproxy server binary, built once per version into the cache (needs Go and the network)."""
    binary = toxiproxy_path(cache)
    if binary.exists():  # caches from before `.complete` have only the binary
        return binary
    log = binary.parent.with_name(f"toxiproxy-{TOXIPROXY_VERSION}.log")

    def build(staging: Path) -> str:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as out:
            proc = subprocess.run(
                [_go(), "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"],
                env={**os.environ, "GOBIN": str(staging), "CGO_ENABLED": "0"},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if proc.returncode != 0 or not (staging / _BINARY).exists():
            raise ClusterUnavailable(
                f"Building toxiproxy {TOXIPROXY_VERSION} with `go install` failed.",
                hint="Check that the Go module proxy is reachable.",
                log_path=log,
            )
        return TOXIPROXY_VERSION + "\n"

    build_once(binary.parent, build)
    return binary


class Toxiproxy:
    """One toxiproxy server on loopback, driven over its HTTP API; stopped on exit."""

    def __init__(self, workdir: Path | str, *, cache: Path | None = None) -> None:
        self.workdir = Path(workdir)
        self.cache = cache
        self.port = free_ports()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Toxiproxy:
        binary = ensure_toxiproxy(self.cache)
        self.workdir.mkdir(parents=True, exist_ok=True)
        with (self.workdir / "toxiproxy.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [str(binary), "-host", "127.0.0.1", "-port", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                self._request("GET", "/version")
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise ClusterUnavailable(
            "toxiproxy did not start.", log_path=self.workdir / "toxiproxy.log", hint="Check its log."
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310  # a loopback http URL we built
            self.api + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            text = response.read().decode()
        return json.loads(text) if text.strip() else None

    def create_proxy(self, name: str, listen: str, upstream: str) -> None:
        self._request(
            "POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream, "enabled": True}
        )

    def add_toxic(self, proxy: str, name: str, kind: str, stream: str, attributes: dict[str, int]) -> None:
        self._request(
            "POST",
            f"/proxies/{proxy}/toxics",
            {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes},
        )

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        """A disabled proxy closes its connections and refuses new ones: the broker looks gone."""
        self._request("POST", f"/proxies/{proxy}", {"enabled": enabled})

    def remove_toxics(self, proxy: str) -> None:
        for toxic in self._request("GET", f"/proxies/{proxy}/toxics") or []:
            with contextlib.suppress(urllib.error.HTTPError):
                self._request("DELETE", f"/proxies/{proxy}/toxics/{toxic['name']}")

    def __enter__(self) -> Toxiproxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class NetworkFaults:
    """One proxy per node of a `Sandbox(proxied=True)`; members bootstrapped at `bootstrap` go through
    them for every broker connection."""

    def __init__(self, sandbox: Sandbox, toxiproxy: Toxiproxy) -> None:
        state = sandbox.status()
        if state is None or state.proxied_bootstrap is None:
            raise InvalidInput(
                "Network faults need a running sandbox started with proxied=True.",
                hint="Start it as Sandbox(..., proxied=True).",
            )
        self.toxiproxy = toxiproxy
        self.bootstrap = state.proxied_bootstrap
        self.proxies: list[str] = []
        for node in state.nodes:
            assert node.proxy_port is not None and node.proxied_port is not None
            name = f"node-{node.node_id}"
            toxiproxy.create_proxy(name, f"127.0.0.1:{node.proxy_port}", f"127.0.0.1:{node.proxied_port}")
            self.proxies.append(name)

    def cut(self) -> None:
        """Every byte between the proxied members and the cluster stops; connections stay open."""
        for proxy in self.proxies:
            for stream in ("upstream", "downstream"):
                self.toxiproxy.add_toxic(proxy, f"cut-{stream}", "timeout", stream, {"timeout": 0})

    def latency(self, ms: int, jitter_ms: int = 0) -> None:
        for proxy in self.proxies:
            for stream in ("upstream", "downstream"):
                self.toxiproxy.add_toxic(
                    proxy, f"latency-{stream}", "latency", stream, {"latency": ms, "jitter": jitter_ms}
                )

    def down(self) -> None:
        """Every connection of the proxied clients closes and none opens: to them the cluster is gone
        (a broker restart, a network partition that resets), until `heal()`."""
        for proxy in self.proxies:
            self.toxiproxy.set_enabled(proxy, False)

    def heal(self) -> None:
        for proxy in self.proxies:
            self.toxiproxy.set_enabled(proxy, True)
            self.toxiproxy.remove_toxics(proxy)


if __name__ == "__main__":  # `make setup`: build it once, ahead of the first test
    import sys

    sys.stdout.write(f"{ensure_toxiproxy()}\n")
