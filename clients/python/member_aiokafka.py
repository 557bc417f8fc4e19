"""aiokafka adapter for member.py (see there). aiokafka is asyncio: the consumer lives on its
own event loop, which runs while member.py polls (getmany) and commits; its rebalance listener
commits on revoke from inside the loop (await commit()). Only awaited commits (sync) are
offered: aiokafka's auto-commit commits the positions getmany() has returned, processed or not,
so a crash loses records by design (its docs say to commit manually for at-least-once), and it
has no asynchronous commit of its own (commit() tasks left running concurrently may land in any
order).

Works with aiokafka 0.7 to current: before 0.9 aiokafka's assignors are kafka-python's
(kafka.coordinator.assignors), later its own (aiokafka.coordinator.assignors); the adapter
offers the ones the release can import. Old releases want the consumer created and subscribed
inside the running event loop, so both happen there."""

import asyncio
import importlib

import aiokafka
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.structs import OffsetAndMetadata

import member

ASSIGNORS = {"range": "RangePartitionAssignor", "roundrobin": "RoundRobinPartitionAssignor"}
# Where a release keeps its assignors: its own package from 0.9, kafka-python's before.
ASSIGNOR_PACKAGES = ("aiokafka.coordinator.assignors", "kafka.coordinator.assignors")


def assignor_class(name):
    for package in ASSIGNOR_PACKAGES:
        try:
            return getattr(importlib.import_module("%s.%s" % (package, name)), ASSIGNORS[name])
        except (ImportError, AttributeError):
            continue
    return None


class Listener(ConsumerRebalanceListener):
    def __init__(self, holder, commit_on_revoke):
        self.holder = holder
        self.commit_on_revoke = commit_on_revoke

    async def on_partitions_revoked(self, revoked):
        if self.commit_on_revoke and "c" in self.holder:
            try:
                await self.holder["c"].commit()
            except Exception as e:
                member.log("commit on revoke: %s: %s" % (type(e).__name__, e))

    async def on_partitions_assigned(self, assigned):
        pass


class Consumer:
    name = "aiokafka"
    version = aiokafka.__version__

    @staticmethod
    def capabilities():
        return {"modes": ["sync"], "group_protocols": {"classic": [n for n in ASSIGNORS if assignor_class(n)]}}

    def __init__(self, args, on_revoke):
        if args["commit"] not in ("sync", "before"):
            raise SystemExit("commit=%s: the aiokafka adapter offers sync (see the adapter)" % args["commit"])
        assignor = assignor_class(args["assignor"]) if args["assignor"] in ASSIGNORS else None
        if assignor is None:
            offered = [n for n in ASSIGNORS if assignor_class(n)]
            raise SystemExit("assignor=%s: aiokafka %s offers %s" % (args["assignor"], aiokafka.__version__, ", ".join(offered)))
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        holder = {}
        listener = Listener(holder, args["commit"] in ("sync", "async"))

        async def make():
            c = AIOKafkaConsumer(
                **member.consumer_timings(args),
                enable_auto_commit=False,
                rebalance_timeout_ms=10000,
                partition_assignment_strategy=(assignor,),
            )
            c.subscribe([args["topic"]], listener=listener)
            return c
        self.c = self.loop.run_until_complete(make())
        holder["c"] = self.c
        self.loop.run_until_complete(self.c.start())

    def poll(self, timeout_s):
        got = self.loop.run_until_complete(self.c.getmany(timeout_ms=int(timeout_s * 1000), max_records=100))
        out = []
        for tp, msgs in got.items():
            out.extend((tp.topic, tp.partition, m.offset) for m in msgs)
        return out

    def processed(self, batch):
        pass

    def commit_sync(self):
        self.loop.run_until_complete(self.c.commit())

    def commit_on_revoke(self):
        pass  # the listener commits from inside the loop

    def commit_offsets(self, ends):
        offsets = {TopicPartition(t, p): member.offsets_and_metadata(OffsetAndMetadata, o)
                   for (t, p), o in ends.items()}
        self.loop.run_until_complete(self.c.commit(offsets))

    def close(self):
        self.loop.run_until_complete(self.c.stop())


if __name__ == "__main__":
    member.main(Consumer)
