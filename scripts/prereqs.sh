#!/usr/bin/env bash
# Make sure the toolchains are present; install them from Debian packages when we can (root + apt-get),
# otherwise stop with one sentence saying what to install.
#   prereqs.sh jdk      a JDK (java + javac, 17+) and Maven: all the sandbox and `make demo` need
#   prereqs.sh testbed  the above, plus Go, Node/npm and gcc for the other client families' members
set -euo pipefail
mode="${1:-testbed}"
case "$mode" in
  jdk | testbed) ;;
  *) echo "Error: unknown mode '$mode'; use jdk or testbed." >&2; exit 2 ;;
esac

missing=()
command -v java >/dev/null 2>&1 || missing+=(java)
command -v javac >/dev/null 2>&1 || missing+=(javac)
command -v mvn >/dev/null 2>&1 || missing+=(mvn)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing ${missing[*]} from Debian packages (openjdk-17-jdk-headless, maven)..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
  else
    echo "Error: ${missing[*]} not found; install a JDK 17+ and Maven (e.g. apt-get install openjdk-17-jdk-headless maven) and rerun." >&2
    exit 2
  fi
fi

major=$(java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
if [ "${major%%.*}" -lt 17 ] 2>/dev/null; then
  echo "Error: Java ${major} found; Apache Kafka 4.x needs Java 17 or newer." >&2
  exit 2
fi

[ "$mode" = jdk ] && exit 0

# The other client families' test-bed members (testbed/interop/) are built with Go (franz-go, sarama,
# confluent-kafka-go, which needs cgo: a C compiler) and Node/npm (KafkaJS). franz-go 1.22 and sarama 1.61
# need Go 1.26+, newer than Debian's golang package, so Go itself is not installed from there.
gobin=$(command -v go 2>/dev/null || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; } || true)
if [ -z "$gobin" ]; then
  echo "Error: go not found; install Go 1.26+ (https://go.dev/doc/install) and rerun." >&2
  exit 2
fi
gover=$("$gobin" env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n' 1.26 "$gover" | sort -V | head -1)" != "1.26" ]; then
  echo "Error: Go $gover found; the Go test-bed members need Go 1.26 or newer." >&2
  exit 2
fi
missing=()
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
# tests/integration/cli/test_fits_the_terminal.py runs the CLI in a real pseudo-terminal
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing ${missing[*]} from Debian packages..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "Error: ${missing[*]} not found; install Node.js 18+ with npm, gcc and tmux, and rerun." >&2
    exit 2
  fi
fi
