"""confluent-kafka (librdkafka) adapter for harness.py (see there). Usage:
python confluent_client.py bootstrap=HOST:PORT,... topic=T group=G partitions=N preload=N [scenario=group|move]
       [protocol=classic|consumer]

protocol=consumer runs the members with `group.protocol=consumer` (KIP-848): the session
timeout and heartbeat interval are the broker's then (librdkafka refuses them, and the
partition assignment strategy, in the client configuration), and the group is assigned by the
coordinator.
"""
import os
import sys

from confluent_kafka import Consumer as RdConsumer, KafkaError, KafkaException, Producer, TopicPartition

import harness

COMMON = {
    "socket.timeout.ms": 10000,
    "reconnect.backoff.ms": 100,
    "reconnect.backoff.max.ms": 1000,
    "retry.backoff.ms": 100,
    "topic.metadata.refresh.interval.ms": 2000,
}


class Client:
    name = "confluent-kafka"

    def __init__(self, bootstrap, protocol="classic"):
        if protocol not in ("classic", "consumer"):
            raise SystemExit("protocol=%s: must be classic or consumer" % protocol)
        self.bootstrap = bootstrap
        self.protocol = protocol
        self.producer = None

    def consumer(self, group, topic, client_id):
        conf = dict(COMMON)
        conf.update({
            "bootstrap.servers": self.bootstrap,
            "group.id": group,
            "client.id": "confluent-" + client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "max.poll.interval.ms": 30000,
            "fetch.wait.max.ms": 200,
        })
        if os.environ.get("GROUPSIM_RDKAFKA_DEBUG"):  # e.g. cgrp,protocol: librdkafka's own log
            conf["debug"] = os.environ["GROUPSIM_RDKAFKA_DEBUG"]
        if self.protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        c = RdConsumer(conf)
        c.subscribe([topic])
        return Consumer(c)

    def produce(self, topic, records):
        if self.producer is None:
            conf = dict(COMMON)
            conf.update({"bootstrap.servers": self.bootstrap, "client.id": "confluent-producer",
                         "enable.idempotence": True, "linger.ms": 5})
            self.producer = Producer(conf)
        errors = []

        def delivered(err, msg):
            if err is not None:
                errors.append(str(err))
        for p, v in records:
            self.producer.produce(topic, value=v.encode(), partition=p, on_delivery=delivered)
        left = self.producer.flush(30)
        if left or errors:
            raise RuntimeError("produce failed: %d undelivered, errors %s" % (left, errors[:3]))

    def committed(self, group, topic, partitions):
        conf = dict(COMMON)
        conf.update({"bootstrap.servers": self.bootstrap, "group.id": group, "client.id": "confluent-inspector",
                     "enable.auto.commit": False})
        c = RdConsumer(conf)
        try:
            tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
            return {tp.partition: tp.offset if tp.offset >= 0 else -1 for tp in tps}
        finally:
            c.close()

    def shutdown(self):
        if self.producer is not None:
            self.producer.flush(5)


class Consumer:
    def __init__(self, c):
        self.c = c

    def poll(self, timeout_s):
        out = []
        for m in self.c.consume(num_messages=500, timeout=timeout_s):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(m.error())
            out.append((m.partition(), m.offset(), m.value()))
        return out

    def commit(self):
        try:
            self.c.commit(asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() == KafkaError._NO_OFFSET:
                return  # nothing consumed since the last commit
            raise

    def assignment(self):
        return [tp.partition for tp in self.c.assignment()]

    def close(self):
        self.c.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    named = dict(a.split("=", 1) for a in args)
    harness.run(Client(named["bootstrap"], named.get("protocol", "classic")), args)
