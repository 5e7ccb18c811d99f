"""Consumer settings from environment variables, the way containers are configured.

`<prefix>BOOTSTRAP_SERVERS`, `GROUP_ID`, `REBALANCE`, ... name the common settings; `<prefix>CONF_<KEY>`
carries any librdkafka key. The result is a librdkafka conf dict; the model validates it.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_coop._vocab import REBALANCE_MODE_ASSIGNOR, REBALANCE_MODES
from kafka_coop.errors import SettingsError
from kafka_coop.identity import resolve_instance_id

DEFAULT_ENV_PREFIX = "KAFKA_COOP_"
ENV_CONF_INFIX = "CONF_"

_NAMED: dict[str, str] = {
    "BOOTSTRAP_SERVERS": "bootstrap.servers",
    "GROUP_ID": "group.id",
    "CLIENT_ID": "client.id",
    "SESSION_TIMEOUT_MS": "session.timeout.ms",
    "MAX_POLL_INTERVAL_MS": "max.poll.interval.ms",
    "REMOTE_ASSIGNOR": "group.remote.assignor",
}


def conf_from_env(environ: Mapping[str, str], prefix: str = DEFAULT_ENV_PREFIX) -> dict[str, str]:
    """The librdkafka conf the variables under `prefix` describe.

    In `CONF_<KEY>` a `_` stands for `.` and `__` for `_` (`CONF_LOG__LEVEL` is `log_level`), since
    environment names cannot hold dots. The named variables win over `CONF_` ones. An `INSTANCE_ID` with
    placeholders (`{pod}`, `{ordinal}`, ...) is resolved from the same environ, so a StatefulSet can give
    every pod its own static id with one variable.
    """
    conf: dict[str, str] = {}
    conf_prefix = prefix + ENV_CONF_INFIX
    for name, value in environ.items():
        if name.startswith(conf_prefix) and len(name) > len(conf_prefix):
            raw = name[len(conf_prefix) :].lower()
            conf[raw.replace("__", "\0").replace("_", ".").replace("\0", "_")] = value
    for var, key in _NAMED.items():
        if prefix + var in environ:
            conf[key] = environ[prefix + var]
    rebalance = environ.get(prefix + "REBALANCE")
    if rebalance is not None:
        conf.pop("partition.assignment.strategy", None)
        conf.pop("group.protocol", None)
        if rebalance == "consumer":
            conf["group.protocol"] = "consumer"
        elif rebalance in REBALANCE_MODE_ASSIGNOR:
            conf["partition.assignment.strategy"] = REBALANCE_MODE_ASSIGNOR[rebalance]
        else:
            raise SettingsError(
                f"{prefix}REBALANCE={rebalance!r} is not a rebalance mode.",
                hint=f"Use one of {', '.join(REBALANCE_MODES)}.",
            )
    instance_id = environ.get(prefix + "INSTANCE_ID")
    if instance_id is not None:
        if "{" in instance_id:
            instance_id = resolve_instance_id(instance_id, group=conf.get("group.id", ""), environ=environ)
        conf["group.instance.id"] = instance_id or ""
    return conf
