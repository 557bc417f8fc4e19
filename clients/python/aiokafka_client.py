"""aiokafka adapter for harness.py (see there). Each member runs its own asyncio loop in its own
thread (harness.Member), so the sync adapter below just drives that loop. Usage:
python aiokafka_client.py bootstrap=HOST:PORT,... topic=T group=G partitions=N preload=N [scenario=group|move]
"""
import asyncio
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

import harness


class Client:
    name = "aiokafka"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def consumer(self, group, topic, client_id):
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)

        async def make():
            return AIOKafkaConsumer(
                topic,
                bootstrap_servers=self.bootstrap,
                group_id=group,
                client_id="aiokafka-" + client_id,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                session_timeout_ms=6000,
                heartbeat_interval_ms=500,
                max_poll_interval_ms=30000,
                fetch_max_wait_ms=200,
                request_timeout_ms=10000,
                metadata_max_age_ms=2000,
                retry_backoff_ms=100,
            )
        c = loop.run_until_complete(make())
        loop.run_until_complete(c.start())
        return Consumer(loop, c)

    def produce(self, topic, records):
        async def go():
            # aiokafka producers are not idempotent by default; ask for it to exercise
            # InitProducerId.
            p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, client_id="aiokafka-producer",
                                 enable_idempotence=True, request_timeout_ms=10000)
            await p.start()
            try:
                futures = [await p.send(topic, value=v.encode(), partition=part) for part, v in records]
                await asyncio.wait_for(asyncio.gather(*futures), 30)
            finally:
                await p.stop()
        asyncio.run(go())

    def committed(self, group, topic, partitions):
        async def go():
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=group, enable_auto_commit=False,
                                 client_id="aiokafka-inspector", request_timeout_ms=10000)
            await c.start()
            try:
                out = {}
                for p in range(partitions):
                    o = await asyncio.wait_for(c.committed(TopicPartition(topic, p)), 15)
                    out[p] = -1 if o is None else o
                return out
            finally:
                await c.stop()
        return asyncio.run(go())

    def shutdown(self):
        pass


class Consumer:
    def __init__(self, loop, c):
        self.loop = loop
        self.c = c

    def poll(self, timeout_s):
        batches = self.loop.run_until_complete(self.c.getmany(timeout_ms=int(timeout_s * 1000)))
        out = []
        for tp, msgs in batches.items():
            out.extend((tp.partition, m.offset, m.value) for m in msgs)
        return out

    def commit(self):
        self.loop.run_until_complete(self.c.commit())

    def assignment(self):
        return [tp.partition for tp in self.c.assignment()]

    def close(self):
        try:
            self.loop.run_until_complete(self.c.stop())
        finally:
            self.loop.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    bootstrap = dict(a.split("=", 1) for a in args)["bootstrap"]
    harness.run(Client(bootstrap), args)
