"""confluent-kafka (librdkafka) adapter for member.py (see there). The at-least-once pattern
librdkafka documents: enable.auto.offset.store=false and store_offsets() after processing, so
whatever is committed (by auto-commit, commit() or commit(asynchronous=True)) was processed.
A rebalance callback commits on revoke (librdkafka serves it inside consume())."""

import confluent_kafka
from confluent_kafka import Consumer as RdConsumer, KafkaError, KafkaException, TopicPartition

import member

ASSIGNORS = {"range": "range", "roundrobin": "roundrobin", "cooperative-sticky": "cooperative-sticky"}


class Consumer:
    name = "confluent-kafka"
    version = "%s (librdkafka %s)" % (confluent_kafka.__version__, confluent_kafka.libversion()[0])

    def __init__(self, args, on_revoke):
        if args["assignor"] not in ASSIGNORS:
            raise SystemExit("assignor=%s: librdkafka offers %s" % (args["assignor"], ", ".join(ASSIGNORS)))
        self.c = RdConsumer({
            "bootstrap.servers": args["bootstrap"],
            "group.id": args["group"],
            "client.id": args["client_id"],
            "enable.auto.commit": args["commit"] == "auto",
            "auto.commit.interval.ms": 500,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": int(args["session_timeout_ms"]),
            "heartbeat.interval.ms": 500,
            "max.poll.interval.ms": 10000,
            "fetch.wait.max.ms": 200,
            "socket.timeout.ms": 10000,
            "reconnect.backoff.ms": 100,
            "reconnect.backoff.max.ms": 1000,
            "retry.backoff.ms": 100,
            "topic.metadata.refresh.interval.ms": 2000,
            "partition.assignment.strategy": ASSIGNORS[args["assignor"]],
        })
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
