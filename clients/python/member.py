"""One consumer-group member per process, for `groupsim check-client` (sim/src/check_client/).

The client-specific part lives in member_<client>.py (member_kafka_python.py,
member_confluent.py, member_aiokafka.py): each opens its client's consumer and adapts it to the
small `Consumer` interface used below. This module is the application: the usual poll loop,
"processing" each record by appending a JSON line to the processed-record log, and committing
in the chosen mode:

  auto    the client's own auto-commit (of what was processed: see each adapter)
  sync    a synchronous commit after every processed batch (a refused one is retried at the
          next poll), and on revoke
  async   an asynchronous commit after every processed batch, a synchronous one when idle with
          records not yet committed, and on revoke
  before  WRONG on purpose: commits a batch's offsets before processing it, so a crash in
          between loses records. Only the broken-mode test uses it.

A processed line is flushed to the log before any commit that covers it, so a SIGKILL never
makes a processed record look lost. Usage (all arguments key=value):
  python member_<client>.py bootstrap=H:P,... topic=T group=G client_id=ID commit=MODE
         out=FILE [work_ms=N] [assignor=range|roundrobin|cooperative-sticky]
         [session_timeout_ms=N] [group_protocol=classic|consumer]
(group_protocol=consumer: KIP-848, where the adapter offers it; the assignor is then the
coordinator's, uniform or range.)
Stdout gets JSON events ({"event": "ready", "client": ..., "version": ..., "assignor": ...,
"commit": ..., "group_protocol": ...} once the consumer exists, {"event": "closed"} after a
graceful close on SIGTERM); errors go to stderr and a non-zero exit.

  python member_<client>.py --capabilities
prints what the installed release offers, asked of the library itself, as one JSON line:
{"event": "capabilities", "client": ..., "version": ..., "modes": [...],
 "group_protocols": {"classic": [assignors...], "consumer": [server assignors...]}}.
groupsim draws each seed's assignor from these lists, so a release is never given an assignor
or protocol it lacks.
"""

import json
import os
import signal
import sys
import time

MODES = ("auto", "sync", "async", "before")
# poll() failures in a row after which the member gives up (an application would alert).
MAX_POLL_ERRORS = 50


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def log(msg):
    sys.stderr.write("[member %.3f] %s\n" % (time.time(), msg))
    sys.stderr.flush()


def parse_args(argv):
    args = {}
    for a in argv:
        if "=" not in a:
            raise SystemExit("argument %r is not key=value" % a)
        k, v = a.split("=", 1)
        args[k] = v
    for key in ("bootstrap", "topic", "group", "client_id", "commit", "out"):
        if key not in args:
            raise SystemExit("missing argument %s=..." % key)
    if args["commit"] not in MODES:
        raise SystemExit("commit=%s: must be one of %s" % (args["commit"], ", ".join(MODES)))
    args.setdefault("work_ms", "2")
    args.setdefault("assignor", "range")
    args.setdefault("session_timeout_ms", "6000")
    return args


class ProcessedLog:
    """The processed-record log: one JSON line per record, flushed before any commit."""

    def __init__(self, path, client_id):
        self.f = open(path, "a", buffering=1 << 16)
        self.client_id = client_id

    def write(self, topic, partition, offset):
        self.f.write(json.dumps({"client": self.client_id, "topic": topic, "partition": partition,
                                 "offset": offset, "ts": time.time() * 1000.0}) + "\n")

    def flush(self):
        self.f.flush()


class Stop:
    """SIGTERM asks for a graceful close (leave the group)."""

    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, *_):
        self.requested = True


def process(batch, out, work_ms):
    for topic, partition, offset in batch:
        if work_ms:
            time.sleep(work_ms / 1000.0)
        out.write(topic, partition, offset)
    out.flush()


def consumer_timings(args):
    """The timings every Java-style client (kafka-python, aiokafka) is given: short enough
    that a seed's faults and heal phase play out in seconds, with Kafka's usual ratios."""
    return dict(
        bootstrap_servers=args["bootstrap"].split(","),
        group_id=args["group"],
        client_id=args["client_id"],
        auto_offset_reset="earliest",
        session_timeout_ms=int(args["session_timeout_ms"]),
        heartbeat_interval_ms=500,
        max_poll_interval_ms=10000,
        fetch_max_wait_ms=200,
        request_timeout_ms=10000,
        metadata_max_age_ms=2000,
        retry_backoff_ms=100,
    )


def next_offsets(batch):
    """{(topic, partition): offset after the last record of the batch}."""
    ends = {}
    for topic, partition, offset in batch:
        key = (topic, partition)
        ends[key] = max(ends.get(key, 0), offset + 1)
    return ends


def run(open_consumer, argv):
    """Runs the member: `open_consumer(args, on_revoke)` returns a Consumer (see the adapters)."""
    args = parse_args(argv)
    mode, work_ms = args["commit"], int(args["work_ms"])
    out = ProcessedLog(args["out"], args["client_id"])
    stop = Stop()
    holder = {}

    def on_revoke():
        # Runs inside poll(): everything poll returned before has been processed and flushed.
        if mode in ("sync", "async") and "c" in holder:
            try:
                holder["c"].commit_on_revoke()
            except Exception as e:
                log("commit on revoke: %s: %s" % (type(e).__name__, e))

    log("chose commit=%s assignor=%s group_protocol=%s" % (
        mode, args["assignor"], args.get("group_protocol", "classic")))
    parent = os.getppid()
    for attempt in range(3):  # a client that fails to start is retried, as a supervisor would
        try:
            consumer = open_consumer(args, on_revoke)
            break
        except SystemExit:
            raise
        except Exception as e:
            log("starting the consumer: %s: %s" % (type(e).__name__, e))
            if attempt == 2:
                raise
            time.sleep(0.5)
    holder["c"] = consumer
    emit({"event": "ready", "client": consumer.name, "version": consumer.version,
          "assignor": args["assignor"], "commit": mode,
          "group_protocol": args.get("group_protocol", "classic")})
    dirty = False  # processed records not yet known to be committed
    errors = 0  # poll() failures in a row
    while not stop.requested:
        if os.getppid() != parent:
            log("the campaign that started this member is gone: exiting")
            os._exit(4)
        try:
            batch = consumer.poll(0.2)
            errors = 0
        except Exception as e:  # e.g. a broker the client lost track of: log, back off, go on
            errors += 1
            log("poll: %s: %s" % (type(e).__name__, e))
            if errors >= MAX_POLL_ERRORS:
                raise
            time.sleep(0.1)
            continue
        if batch:
            if mode == "before":
                try:
                    consumer.commit_offsets(next_offsets(batch))
                except Exception as e:
                    log("commit before processing: %s: %s" % (type(e).__name__, e))
            process(batch, out, work_ms)
            consumer.processed(batch)
            dirty = True
        if not dirty or mode not in ("sync", "async"):
            continue
        # A refused commit (a rebalance, a coordinator moving) is retried at the next poll; in
        # async mode a batch is committed asynchronously and the last one synchronously once
        # the member is idle (commitAsync in the loop, commitSync when it matters).
        try:
            if mode == "async" and batch:
                consumer.commit_async()
            else:
                consumer.commit_sync()
                dirty = False
        except Exception as e:
            log("commit: %s: %s" % (type(e).__name__, e))
    log("SIGTERM: closing")
    try:
        if mode in ("sync", "async"):
            consumer.commit_sync()
    except Exception as e:
        log("final commit: %s: %s" % (type(e).__name__, e))
    consumer.close()
    emit({"event": "closed"})


def offsets_and_metadata(cls, offset):
    """kafka-python's (and old aiokafka's) OffsetAndMetadata for `offset`: 2.0 has the fields
    (offset, metadata), later releases add leader_epoch (-1: unknown)."""
    extra = [-1] * (len(cls._fields) - 2)
    return cls(offset, "", *extra)


def print_capabilities(consumer_class):
    caps = consumer_class.capabilities()
    emit(dict(event="capabilities", client=consumer_class.name, version=consumer_class.version, **caps))


def main(open_consumer):
    if sys.argv[1:] == ["--capabilities"]:
        print_capabilities(open_consumer)
        return
    try:
        run(open_consumer, sys.argv[1:])
    except SystemExit:
        raise
    except Exception as e:
        log("FAILED: %s: %s" % (type(e).__name__, e))
        sys.exit(3)
