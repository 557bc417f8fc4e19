"""kafka-python adapter for harness.py (see there). Usage:
python kafka_python_client.py bootstrap=HOST:PORT,... topic=T group=G partitions=N preload=N [scenario=group|move]
"""
import logging
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

import harness


class Client:
    name = "kafka-python"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.producer = None

    def consumer(self, group, topic, client_id):
        c = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=group,
            client_id="kafka-python-" + client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            max_poll_interval_ms=30000,
            fetch_max_wait_ms=200,
            request_timeout_ms=10000,
            metadata_max_age_ms=2000,
            retry_backoff_ms=100,
            reconnect_backoff_ms=100,
        )
        c.subscribe([topic])
        return Consumer(c)

    def produce(self, topic, records):
        if self.producer is None:
            # kafka-python 3 producers are idempotent by default: this exercises InitProducerId.
            self.producer = KafkaProducer(bootstrap_servers=self.bootstrap, client_id="kafka-python-producer",
                                          acks="all", linger_ms=5, request_timeout_ms=10000)
        futures = [self.producer.send(topic, value=v.encode(), partition=p) for p, v in records]
        self.producer.flush(timeout=30)
        for f in futures:
            f.get(timeout=30)

    def committed(self, group, topic, partitions):
        c = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=group, enable_auto_commit=False,
                          client_id="kafka-python-inspector", request_timeout_ms=10000)
        try:
            out = {}
            for p in range(partitions):
                o = c.committed(TopicPartition(topic, p))
                out[p] = -1 if o is None else o
            return out
        finally:
            c.close(autocommit=False)

    def shutdown(self):
        if self.producer is not None:
            self.producer.close(timeout=5)


class Consumer:
    def __init__(self, c):
        self.c = c

    def poll(self, timeout_s):
        out = []
        for tp, msgs in self.c.poll(timeout_ms=int(timeout_s * 1000)).items():
            out.extend((tp.partition, m.offset, m.value) for m in msgs)
        return out

    def commit(self):
        self.c.commit()

    def assignment(self):
        return [tp.partition for tp in self.c.assignment()]

    def close(self):
        self.c.close(autocommit=False)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    args = sys.argv[1:]
    bootstrap = dict(a.split("=", 1) for a in args)["bootstrap"]
    harness.run(Client(bootstrap), args)
