"""kafka-python adapter for member.py (see there): KafkaConsumer with a rebalance listener,
commits with commit() / commit_async(); auto mode is the consumer's own auto-commit, which
kafka-python runs inside poll() for the records earlier polls returned (already processed).
kafka-python 3 runs rebalance listeners on its IO thread, where a blocking commit() raises; the
listener commits with commit_async() instead (the batch loop has committed synchronously already).
Works with kafka-python 2.0 to 3.x: the assignors offered are those the release ships
(cooperative-sticky only from 3.0), asked by importing them."""

import importlib

import kafka
from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

import member

ASSIGNORS = {
    "range": ("kafka.coordinator.assignors.range", "RangePartitionAssignor"),
    "roundrobin": ("kafka.coordinator.assignors.roundrobin", "RoundRobinPartitionAssignor"),
    "cooperative-sticky": ("kafka.coordinator.assignors.cooperative_sticky", "CooperativeStickyAssignor"),
}


def importable(name):
    module, cls = ASSIGNORS[name]
    try:
        return getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError):
        return None


def assignor_class(name):
    offered = [n for n in ASSIGNORS if importable(n)]
    if name not in offered:
        raise SystemExit("assignor=%s: kafka-python %s offers %s" % (name, kafka.__version__, ", ".join(offered)))
    return importable(name)


class Listener(ConsumerRebalanceListener):
    def __init__(self, on_revoke):
        self.on_revoke = on_revoke

    def on_partitions_revoked(self, revoked):
        self.on_revoke()

    def on_partitions_assigned(self, assigned):
        pass


class Consumer:
    name = "kafka-python"
    version = kafka.__version__

    @staticmethod
    def capabilities():
        modes = ["sync"] + (["async"] if hasattr(KafkaConsumer, "commit_async") else []) + ["auto"]
        return {"modes": modes, "group_protocols": {"classic": [n for n in ASSIGNORS if importable(n)]}}

    def __init__(self, args, on_revoke):
        self.c = KafkaConsumer(
            **member.consumer_timings(args),
            enable_auto_commit=args["commit"] == "auto",
            auto_commit_interval_ms=500,
            max_poll_records=100,
            reconnect_backoff_ms=100,
            partition_assignment_strategy=[assignor_class(args["assignor"])],
        )
        self.c.subscribe([args["topic"]], listener=Listener(on_revoke))

    def poll(self, timeout_s):
        out = []
        for tp, msgs in self.c.poll(timeout_ms=int(timeout_s * 1000)).items():
            out.extend((tp.topic, tp.partition, m.offset) for m in msgs)
        return out

    def processed(self, batch):
        pass

    def commit_sync(self):
        self.c.commit()

    def commit_async(self):
        self.c.commit_async()

    def commit_on_revoke(self):
        self.c.commit_async()

    def commit_offsets(self, ends):
        self.c.commit({TopicPartition(t, p): member.offsets_and_metadata(OffsetAndMetadata, o)
                       for (t, p), o in ends.items()})

    def close(self):
        self.c.close(autocommit=True)


if __name__ == "__main__":
    member.main(Consumer)
