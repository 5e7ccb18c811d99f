"""Resolve Apache Kafka's runtime classpath from Maven Central into a local cache, once.

The first resolution runs Maven on a generated pom; later calls find the finished cache and need neither
Maven nor the network.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

from kafka_coop._jvm import build_once, cache_dir, is_built
from kafka_coop.errors import ClusterUnavailable, InvalidInput

SLF4J_VERSION = "1.7.36"
# kafka-tools without its dependencies: the classes behind Kafka's scripts that are not in the broker's
# jar (from 4.4 kafka-configs.sh runs org.apache.kafka.tools.ConfigCommand; the Scala one is gone).

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.kafka-coop</groupId>
  <artifactId>sandbox-kafka</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{kafka}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId><version>{kafka}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>{kafka}</version>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>{slf4j}</version>
    </dependency>
  </dependencies>
</project>
"""


# The Kafka releases the sandbox runs: the ones the suite tests, each in KRaft mode from Maven Central jars
# with the sandbox's configuration. 4.4 runs the whole suite (the default); 3.7-3.9 keep their own answers
# (tests/integration/test_kafka3_brokers.py); 4.0-4.2 run the cross-version lane
# (tests/integration/test_cross_version.py). Earlier 3.x releases lack what inspection and the plans read
# (KIP-848's early-access configs, ConsumerGroupDescribe); 4.3 is not tested, so it is not offered.
TESTED_KAFKA = ((3, 7), (3, 8), (3, 9), (4, 0), (4, 1), (4, 2), (4, 4))
SUPPORTED_KAFKA_TEXT = "3.7.x, 3.8.x, 3.9.x, 4.0.x, 4.1.x, 4.2.x and 4.4.x (e.g. 3.9.0, 4.4.0)"
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def check_kafka_version(version: str) -> str:
    """`version` if it is a release of a line the suite tests (TESTED_KAFKA), as MAJOR.MINOR.PATCH."""
    match = _VERSION.fullmatch(version.strip())
    major_minor = (int(match.group(1)), int(match.group(2))) if match else None
    if major_minor not in TESTED_KAFKA:
        raise InvalidInput(
            f"Kafka {version!r} is not a release the sandbox is tested on: it runs {SUPPORTED_KAFKA_TEXT}.",
            hint="Pass --kafka-version with one of those, as MAJOR.MINOR.PATCH.",
        )
    return version.strip()


def require_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise InvalidInput(
            "Java was not found on PATH; the sandbox runs Apache Kafka on a JVM.",
            hint="Install a JDK 17+ (e.g. `apt-get install openjdk-17-jdk-headless`) and retry.",
        )
    return java


def kafka_lib_dir(kafka_version: str, *, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / f"kafka-{kafka_version}" / "lib"


def resolve_kafka_jars(kafka_version: str, *, cache: Path | None = None) -> Path:
    """Return the directory holding every runtime jar of the broker and kafka-clients."""
    lib = kafka_lib_dir(kafka_version, cache=cache)
    if is_built(lib):
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise InvalidInput(
            f"Maven was not found on PATH and Kafka {kafka_version} jars are not cached yet.",
            hint="Install Maven (e.g. `apt-get install maven`) once; later starts work offline.",
        )
    work = lib.parent
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(_POM.format(kafka=kafka_version, slf4j=SLF4J_VERSION))
    log = work / "maven.log"

    def build(staging: Path) -> str:
        with log.open("w") as out:
            proc = subprocess.run(
                [
                    mvn,
                    "-B",
                    "-q",
                    "dependency:copy-dependencies",
                    "-DincludeScope=runtime",
                    f"-DoutputDirectory={staging}",
                ],
                cwd=work,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if proc.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
            raise ClusterUnavailable(
                f"Maven could not resolve org.apache.kafka:kafka_2.13:{kafka_version} from Maven Central.",
                hint=f"Check the release exists ({SUPPORTED_KAFKA_TEXT}) and Maven Central is reachable.",
                log_path=log,
            )
        return fingerprint(staging)

    return build_once(lib, build)


def fingerprint(lib: Path) -> str:
    """A short digest of the jar names, used to key compiled classes against this classpath."""
    names = "\n".join(sorted(p.name for p in lib.glob("*.jar")))
    return hashlib.sha256(names.encode()).hexdigest()[:16]
