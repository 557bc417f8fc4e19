"""librdkafka's mock cluster as a `check-broker` target.

librdkafka runs a mock Kafka cluster on loopback inside any of its clients when the client is
configured with `test.mock.num.brokers`. This script starts one through confluent-kafka's
Producer, creates the topic by producing to it (the mock creates no topic through
CreateTopics), prints the brokers' addresses as one `host:port,...` line on stdout, and keeps
the cluster up until stdin closes, so the cluster dies with the process that started it.

Usage: mock_cluster.py [--brokers N] [--topic NAME] [--debug]
  --debug  the mock's own log (librdkafka `debug=mock`) on stderr

Used by cli/tests/check_broker_mock.rs and by hand (docs/check-broker.md).
"""

import argparse
import sys
import threading

import confluent_kafka


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args()
    if args.brokers < 1:
        sys.exit("mock_cluster: --brokers must be at least 1")

    config = {"test.mock.num.brokers": args.brokers}
    if args.debug:
        config["debug"] = "mock"
    producer = confluent_kafka.Producer(config)
    for _ in range(8):
        producer.produce(args.topic, b"x")
    if producer.flush(10) != 0:
        sys.exit("mock_cluster: the mock did not take the records that create the topic")
    brokers = producer.list_topics(timeout=10).brokers.values()
    addrs = sorted(f"{b.host}:{b.port}" for b in brokers)
    if not addrs:
        sys.exit("mock_cluster: the mock lists no broker")
    print(",".join(addrs), flush=True)

    closed = threading.Event()

    def wait_for_eof():
        sys.stdin.read()
        closed.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    while not closed.is_set():
        producer.poll(0.5)


if __name__ == "__main__":
    main()
