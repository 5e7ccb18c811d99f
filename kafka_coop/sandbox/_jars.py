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
      <groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>{slf4j}</version>
    </dependency>
  </dependencies>
</project>
"""


# The Kafka releases the CLI routes plans for, and that run from Maven Central jars in KRaft mode with
# the sandbox's configuration (checked: 3.7.2, 3.8.1, 3.9.0, 4.0.0-4.3.x). Earlier 3.x releases lack
# what inspection and the plans read (KIP-848's early-access configs, ConsumerGroupDescribe).
SUPPORTED_KAFKA = ((3, 7), (3, 8), (3, 9))
SUPPORTED_KAFKA_TEXT = "3.7.x, 3.8.x, 3.9.x and 4.x (e.g. 3.9.0, 4.1.1)"
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def check_kafka_version(version: str) -> str:
    """`version` if the sandbox supports it: 3.7-3.9 or any 4.x release, as MAJOR.MINOR.PATCH."""
    match = _VERSION.fullmatch(version.strip())
    major_minor = (int(match.group(1)), int(match.group(2))) if match else None
    if major_minor is None or not (major_minor in SUPPORTED_KAFKA or major_minor[0] == 4):
        raise InvalidInput(
            f"Kafka {version!r} is not a release the sandbox supports: it runs {SUPPORTED_KAFKA_TEXT}.",
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
                hint="Check the version exists (4.0.0 to 4.3.x) and that Maven Central is reachable.",
                log_path=log,
            )
        return fingerprint(staging)

    return build_once(lib, build)


def fingerprint(lib: Path) -> str:
    """A short digest of the jar names, used to key compiled classes against this classpath."""
    names = "\n".join(sorted(p.name for p in lib.glob("*.jar")))
    return hashlib.sha256(names.encode()).hexdigest()[:16]
