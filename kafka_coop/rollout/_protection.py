"""Whether the control topic is protected (pure): who the broker's ACLs let write it.

`rollout run` changes kafka-coop members through the control topic, so whoever may write it may
reconfigure the fleet. Before the first live step the runner reads the ACLs that apply to the topic
(literal, prefixed and the `*` resource, for any principal, `User:*` included) and refuses the walk when
anyone but the operator's principal may write it, or when the cluster has no authorizer at all, unless
the operator accepts that (`--unprotected-control`, for a sandbox or a dev cluster). docs/rollout-run.md
"The control topic's ACLs".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from kafka_coop.control import CONTROL_TOPIC, CONTROL_TOPIC_ACLS

# The operations that let a principal produce to a topic.
WRITING = frozenset({"WRITE", "ALL"})
# SASL mechanisms whose principal is `User:<sasl.username>` with Kafka's default principal builder.
USERNAME_MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})


class AclGrant(BaseModel):
    """One ACL binding that applies to the control topic, in the broker's own words."""

    model_config = ConfigDict(frozen=True)

    principal: str
    operation: str
    permission: str  # ALLOW or DENY


def operator_principal(conf: Mapping[str, str]) -> str | None:
    """The runner's own principal when its settings say it (SASL PLAIN or SCRAM), else None."""
    mechanism = conf.get("sasl.mechanism", conf.get("sasl.mechanisms", "")).upper()
    username = conf.get("sasl.username")
    if mechanism in USERNAME_MECHANISMS and username:
        return f"User:{username}"
    return None


def writers(grants: Sequence[AclGrant]) -> set[str]:
    """The principals the grants let write (an ALLOW of WRITE or ALL that no DENY of the same undoes)."""
    allowed = {g.principal for g in grants if g.permission == "ALLOW" and g.operation in WRITING}
    denied = {g.principal for g in grants if g.permission == "DENY" and g.operation in WRITING}
    if "User:*" in denied:
        return set()
    return allowed - denied


def acls_to_add(topic: str = CONTROL_TOPIC) -> str:
    """The ACLs a protected control topic has, as a hint's words."""
    return "; ".join(f"{acl.who}: {', '.join(acl.operations)} on {topic}" for acl in CONTROL_TOPIC_ACLS)


def unprotected_reason(
    grants: Sequence[AclGrant] | None, *, operator: str | None, topic: str = CONTROL_TOPIC
) -> str | None:
    """Why the control topic is not protected, or None when only the operator may write it.

    `grants` None means the cluster has no authorizer (SECURITY_DISABLED). An operator principal that is
    not known (GSSAPI, OAUTHBEARER, mutual TLS) passes a topic that one principal at most may write.
    """
    if grants is None:
        return (
            f"The cluster has no authorizer, so any client may write the control topic {topic} and "
            "reconfigure the fleet."
        )
    if not grants:
        # a broker without an authorizer may answer so too (KRaft's describe_acls lists none)
        return (
            f"No ACL applies to the control topic {topic}: without an authorizer any client may write it "
            "and reconfigure the fleet, with one its members cannot read it."
        )
    who = writers(grants)
    if "User:*" in who:
        return f"Every principal (User:*) may write the control topic {topic} and reconfigure the fleet."
    others = sorted(who - {operator}) if operator is not None else (sorted(who) if len(who) > 1 else [])
    if others:
        return (
            f"{', '.join(others)} may write the control topic {topic}, not only the operator's principal"
            f"{f' {operator}' if operator else ''}: any of them could reconfigure the fleet."
        )
    return None
