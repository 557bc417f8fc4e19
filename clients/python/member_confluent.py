"""confluent-kafka (librdkafka) adapter for member.py (see there). The at-least-once pattern
librdkafka documents: enable.auto.offset.store=false and store_offsets() after processing, so
whatever is committed (by auto-commit, commit() or commit(asynchronous=True)) was processed.
A rebalance callback commits on revoke (librdkafka serves it inside consume()).

group_protocol=consumer runs the member with `group.protocol=consumer` (KIP-848): the
coordinator assigns (assignor=uniform|range is `group.remote.assignor`), and the session timeout
and heartbeat interval are the broker's (librdkafka refuses `session.timeout.ms`,
`heartbeat.interval.ms` and `partition.assignment.strategy` with it); `max.poll.interval.ms`
is the rebalance timeout the member sends. GROUPSIM_RDKAFKA_DEBUG=cgrp,protocol in the
environment writes librdkafka's own log to OUT.rdkafka.log beside the processed-record log.

What a release offers is asked of librdkafka: a consumer is constructed (never connected)
with each assignor, and with group.protocol=consumer; librdkafka refuses at construction what
it does not know (cooperative-sticky before 1.6, group.protocol before 2.4) or, with the
settings the member uses, cannot run. Before 2.10 librdkafka wants a client-side session timeout
with group.protocol=consumer too (see consumer_protocol_settings)."""

import logging
import os

import confluent_kafka
from confluent_kafka import Consumer as RdConsumer, KafkaError, KafkaException, TopicPartition

import member

ASSIGNORS = {"range": "range", "roundrobin": "roundrobin", "cooperative-sticky": "cooperative-sticky"}
# Server-side assignors of a consumer group (group.remote.assignor).
REMOTE_ASSIGNORS = ("uniform", "range")
# The rebalance timeout every adapter uses.
MAX_POLL_INTERVAL_MS = 10000


def accepts(extra):
    """Whether librdkafka constructs a consumer with the settings `extra` (it is closed at once,
    before it reaches any broker)."""
    conf = {"group.id": "groupsim-capabilities", "bootstrap.servers": "127.0.0.1:9", "log_level": 0}
    conf.update(extra)
    try:
        c = RdConsumer(conf)
    except (KafkaException, ValueError, TypeError):
        return False
    c.close()
    return True


def consumer_protocol_settings(assignor, session_timeout_ms):
    """The group.protocol=consumer settings this librdkafka takes with the member's
    max.poll.interval.ms, or None. From 2.10 the session timeout is the broker's alone (librdkafka
    refuses session.timeout.ms); before, librdkafka still checks max.poll.interval.ms against a
    client-side session.timeout.ms (45 s by default), so it is given the broker's."""
    base = {"group.protocol": "consumer", "group.remote.assignor": assignor,
            "max.poll.interval.ms": MAX_POLL_INTERVAL_MS}
    for extra in ({}, {"session.timeout.ms": session_timeout_ms}):
        conf = dict(base, **extra)
        if accepts(conf):
            return conf
    return None


class Consumer:
    name = "confluent-kafka"
    version = "%s (librdkafka %s)" % (confluent_kafka.__version__, confluent_kafka.libversion()[0])

    @staticmethod
    def capabilities():
        classic = [n for n in ASSIGNORS if accepts({"partition.assignment.strategy": ASSIGNORS[n]})]
        protocols = {"classic": classic}
        if consumer_protocol_settings(REMOTE_ASSIGNORS[0], 6000) is not None:
            protocols["consumer"] = list(REMOTE_ASSIGNORS)
        return {"modes": ["sync", "async", "auto"], "group_protocols": protocols}

    def __init__(self, args, on_revoke):
        protocol = args.get("group_protocol", "classic")
        if protocol not in ("classic", "consumer"):
            raise SystemExit("group_protocol=%s: must be classic or consumer" % protocol)
        offered = REMOTE_ASSIGNORS if protocol == "consumer" else ASSIGNORS
        if args["assignor"] not in offered:
            raise SystemExit("assignor=%s: librdkafka offers %s with group_protocol=%s"
                             % (args["assignor"], ", ".join(offered), protocol))
        conf = {
            "bootstrap.servers": args["bootstrap"],
            "group.id": args["group"],
            "client.id": args["client_id"],
            "enable.auto.commit": args["commit"] == "auto",
            "auto.commit.interval.ms": 500,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
            "fetch.wait.max.ms": 200,
            "socket.timeout.ms": 10000,
            "reconnect.backoff.ms": 100,
            "reconnect.backoff.max.ms": 1000,
            "retry.backoff.ms": 100,
            "topic.metadata.refresh.interval.ms": 2000,
        }
        if protocol == "consumer":
            settings = consumer_protocol_settings(args["assignor"], int(args["session_timeout_ms"]))
            if settings is None:
                raise SystemExit("group_protocol=consumer: librdkafka %s refuses it with this adapter's "
                                 "settings" % confluent_kafka.libversion()[0])
            conf.update(settings)
        else:
            conf.update({
                "session.timeout.ms": int(args["session_timeout_ms"]),
                "heartbeat.interval.ms": 500,
                "partition.assignment.strategy": ASSIGNORS[args["assignor"]],
            })
        logger = None
        if os.environ.get("GROUPSIM_RDKAFKA_DEBUG"):
            # librdkafka's own log, beside the processed-record log (OUT.rdkafka.log).
            conf["debug"] = os.environ["GROUPSIM_RDKAFKA_DEBUG"]
            logger = logging.getLogger("rdkafka-" + args["client_id"])
            logger.addHandler(logging.FileHandler(args["out"] + ".rdkafka.log"))
            logger.setLevel(logging.DEBUG)
        self.c = RdConsumer(conf, logger=logger) if logger else RdConsumer(conf)
        self.c.subscribe([args["topic"]], on_revoke=lambda consumer, partitions: on_revoke())

    def poll(self, timeout_s):
        msgs = self.c.consume(num_messages=100, timeout=timeout_s)
        for m in msgs:
            if m.error() and m.error().code() != KafkaError._PARTITION_EOF:
                member.log("consume error: %s" % m.error())
        return [(m.topic(), m.partition(), m.offset()) for m in msgs if not m.error()]

    def processed(self, batch):
        ends = member.next_offsets(batch)
        self.c.store_offsets(offsets=[TopicPartition(t, p, o) for (t, p), o in ends.items()])

    def _commit(self, asynchronous):
        """Commits the stored offsets; having none to commit (nothing processed since the last
        commit) is not an error."""
        try:
            self.c.commit(asynchronous=asynchronous)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:
                raise

    def commit_sync(self):
        self._commit(False)

    def commit_async(self):
        self._commit(True)

    def commit_on_revoke(self):
        self._commit(False)

    def commit_offsets(self, ends):
        self.c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in ends.items()], asynchronous=False)

    def close(self):
        self.c.close()


if __name__ == "__main__":
    member.main(Consumer)
