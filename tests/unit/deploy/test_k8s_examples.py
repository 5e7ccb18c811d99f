"""The Kubernetes manifests in examples/k8s validate against the Kubernetes schemas (offline, strict)."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

EXAMPLES = Path(__file__).parents[3] / "examples" / "k8s"
KUBERNETES_VERSION = "1.37.0"  # the newest schemas kubernetes-validate ships
MANIFESTS = sorted(EXAMPLES.glob("*.yaml"))


def test_there_are_manifests_to_validate() -> None:
    assert {p.name for p in MANIFESTS} >= {
        "statefulset.yaml",
        "deployment.yaml",
        "pdb.yaml",
        "helm-pre-upgrade-gate.yaml",
    }


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_validates_against_the_kubernetes_schemas(path: Path) -> None:
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert documents
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_a_misspelt_field_is_caught_so_the_check_is_not_vacuous() -> None:
    document = yaml.safe_load((EXAMPLES / "pdb.yaml").read_text())
    document["spec"]["maxUnavailabe"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_static_members_outlast_their_restart_and_the_grace_period_outlasts_prestop() -> None:
    pod = yaml.safe_load((EXAMPLES / "statefulset.yaml").read_text())["spec"]["template"]["spec"]
    container = pod["containers"][0]
    command = container["command"]
    session_ms = int(command[command.index("--conf") + 1].split("=")[1])
    pre_stop_s = int(container["lifecycle"]["preStop"]["exec"]["command"][1])
    grace_s = pod["terminationGracePeriodSeconds"]
    assert pre_stop_s < grace_s
    assert grace_s * 1000 < session_ms, "a pod killed at the end of its grace period rejoins in time"
    assert command[command.index("--instance-id") + 1] == "{pod}"
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in container["env"]
