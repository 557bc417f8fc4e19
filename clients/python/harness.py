"""Conformance scenarios for a real Kafka client against `groupsim serve`.

Driven by scenarios/tests/real_clients.rs, which starts a groupsim Cluster, runs one client
script (kafka_python_client.py, confluent_client.py, aiokafka_client.py) and reads the JSON
lines it prints. Each script only adapts its client library to the small `Client` interface
below; the scenarios are here, so every Python client is held to the same checks.

Scenario "group" (one process, members polled in turn):
  1. three members join the group and consume the preloaded topic, committing after every batch;
  2. one member leaves; the two others must take over its partitions (new records are produced
     with the client's own producer and must all be consumed, those on the leaver's partitions
     included);
  3. the two close; more records are produced; the committed offsets are read back;
  4. "restart": two new members join and must resume exactly at the committed offsets and
     consume everything after them.
Scenario "move": three members consume; the script prints {"event": "ready_for_move"} and waits
for a line on stdin (the test moves the group's coordinator meanwhile); more records are produced
and must all be consumed across the move.

Output: JSON lines on stdout; the last one is {"event": "result", ...}. Every wait is bounded.
"""

import json
import sys
import threading
import time

WAIT_S = 45.0


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def log(msg):
    sys.stderr.write("[harness %.1f] %s\n" % (time.monotonic() - T0, msg))
    sys.stderr.flush()


T0 = time.monotonic()


class Member:
    """One consumer-group member: a thread running the usual poll / process / commit loop on
    its own client consumer (clients are not shared between threads)."""

    def __init__(self, name, factory, state):
        self.name = name
        self.state = state
        self.assigned = set()
        self.records = []  # (partition, offset, value)
        self.stopping = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(factory,), name=name, daemon=True)
        self.thread.start()

    def _run(self, factory):
        consumer = None
        try:
            consumer = factory()
            dirty = False
            while not self.stopping.is_set():
                batch = consumer.poll(0.5)
                with self.state.lock:
                    for partition, offset, value in batch:
                        self.records.append((partition, offset, value))
                        self.state.consumed.setdefault(partition, []).append(offset)
                dirty = dirty or bool(batch)
                if dirty:
                    try:
                        consumer.commit()
                        dirty = False
                    except Exception as e:  # refused during a rebalance: retried next round
                        self.state.note("%s commit: %s" % (self.name, e))
                self.assigned = set(consumer.assignment())
        except Exception as e:
            self.error = "%s: %s: %s" % (self.name, type(e).__name__, e)
            log(self.error)
        finally:
            if consumer is not None:
                try:
                    consumer.commit()
                except Exception as e:
                    self.state.note("%s final commit: %s" % (self.name, e))
                try:
                    consumer.close()
                except Exception as e:
                    self.state.note("%s close: %s" % (self.name, e))
            self.assigned = set()

    def assignment(self):
        return set(self.assigned)

    def close(self, timeout=30):
        """Leaves the group (commit, close) and waits for the thread to finish."""
        self.stopping.set()
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError("member %s did not close within %ss" % (self.name, timeout))


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.consumed = {}  # partition -> [offsets in consumption order]
        self.notes = []

    def note(self, text):
        with self.lock:
            self.notes.append(text)


def wait_until(what, members, state, cond, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    next_report = time.monotonic() + 5
    while time.monotonic() < deadline:
        failed = [m.error for m in members if m.error]
        if failed:
            raise RuntimeError("; ".join(failed))
        with state.lock:
            done = cond()
        if done:
            log("ok: " + what)
            return
        if time.monotonic() > next_report:
            next_report += 5
            log("waiting for %s: assignments %s, consumed %s" % (
                what, {m.name: sorted(m.assignment()) for m in members},
                {p: len(o) for p, o in sorted(state.consumed.items())}))
        time.sleep(0.05)
    raise TimeoutError("timed out after %.0fs waiting for: %s" % (timeout, what))


def have_all(state, partitions, upto):
    """Every offset below upto[p] of every partition has been consumed."""
    for p in range(partitions):
        seen = set(state.consumed.get(p, []))
        if not all(o in seen for o in range(upto[p])):
            return False
    return True


def run(client, argv):
    """Runs the scenario named in argv with `client` (see module docs)."""
    args = dict(a.split("=", 1) for a in argv if "=" in a)
    scenario = args.get("scenario", "group")
    topic = args["topic"]
    group = args["group"]
    partitions = int(args["partitions"])
    preload = int(args["preload"])
    produce = int(args.get("produce", "5"))
    result = {"event": "result", "client": client.name, "scenario": scenario}
    state = State()
    members = []
    try:
        if scenario == "group":
            run_group(client, topic, group, partitions, preload, produce, state, members, result)
        elif scenario == "move":
            run_move(client, topic, group, partitions, preload, produce, state, members, result)
        else:
            raise ValueError("unknown scenario %r" % scenario)
        result["ok"] = True
    except Exception as e:
        result["ok"] = False
        result["error"] = "%s: %s" % (type(e).__name__, e)
        log("FAILED: " + result["error"])
    finally:
        for m in members:
            try:
                m.close()
            except Exception as e:
                log("closing %s: %s" % (m.name, e))
        try:
            client.shutdown()
        except Exception as e:
            log("client shutdown: %s" % e)
    result["consumed"] = {str(p): offs for p, offs in sorted(state.consumed.items())}
    result["notes"] = state.notes[:20]
    emit(result)


def consumer_factory(client, group, topic, name):
    return lambda: client.consumer(group, topic, name)


def produce_round(client, topic, partitions, count, tag):
    """Produces `count` records to every partition with the client's own producer."""
    records = [(p, "%s-%d-%s-%d" % (topic, p, tag, i)) for p in range(partitions) for i in range(count)]
    client.produce(topic, records)
    log("produced %d records (%s)" % (len(records), tag))


def run_group(client, topic, group, partitions, preload, produce, state, members, result):
    ends = [preload] * partitions
    for i in range(3):
        members.append(Member("m%d" % i, consumer_factory(client, group, topic, "m%d" % i), state))
    trio = members[:]

    def three_way():
        sets = [m.assignment() for m in trio]
        return all(sets) and set().union(*sets) == set(range(partitions)) and \
            sum(len(s) for s in sets) == partitions
    wait_until("three members share the partitions", trio, state, three_way)
    wait_until("the preloaded records are consumed", trio, state, lambda: have_all(state, partitions, ends))
    result["assignment_of_three"] = {m.name: sorted(m.assignment()) for m in trio}

    leaver = trio[2]
    leaver_partitions = sorted(leaver.assignment())
    leaver.close()
    log("m2 left, it had %s" % leaver_partitions)
    pair = trio[:2]

    def two_way():
        sets = [m.assignment() for m in pair]
        return all(sets) and set().union(*sets) == set(range(partitions))
    wait_until("the two others take over the leaver's partitions", pair, state, two_way)
    result["assignment_of_two"] = {m.name: sorted(m.assignment()) for m in pair}
    result["leaver_partitions"] = leaver_partitions

    produce_round(client, topic, partitions, produce, "b")
    ends = [e + produce for e in ends]
    wait_until("the records produced after the leave are consumed", pair, state,
               lambda: have_all(state, partitions, ends))
    taken = sorted(p for m in pair for (p, o, _) in m.records if p in leaver_partitions and o >= preload)
    result["taken_over_partitions"] = sorted(set(taken))

    for m in pair:
        m.close()
    produce_round(client, topic, partitions, produce, "c")
    result["committed_before_restart"] = {str(p): o for p, o in sorted(client.committed(group, topic, partitions).items())}
    restart_from = {p: len(state.consumed.get(p, [])) and max(state.consumed[p]) + 1 for p in range(partitions)}
    result["consumed_before_restart"] = {str(p): o for p, o in sorted(restart_from.items())}
    mark = {p: len(state.consumed.get(p, [])) for p in range(partitions)}

    restarted = [Member("r%d" % i, consumer_factory(client, group, topic, "r%d" % i), state) for i in range(2)]
    members.extend(restarted)
    ends = [e + produce for e in ends]
    wait_until("after the restart every later record is consumed", restarted, state,
               lambda: have_all(state, partitions, ends))
    result["first_after_restart"] = {
        str(p): (state.consumed[p][mark[p]] if len(state.consumed.get(p, [])) > mark[p] else None)
        for p in range(partitions)
    }
    result["log_end"] = ends


def run_move(client, topic, group, partitions, preload, produce, state, members, result):
    ends = [preload] * partitions
    for i in range(3):
        members.append(Member("m%d" % i, consumer_factory(client, group, topic, "m%d" % i), state))

    def all_assigned():
        sets = [m.assignment() for m in members]
        return all(sets) and set().union(*sets) == set(range(partitions))
    wait_until("three members share the partitions", members, state, all_assigned)
    wait_until("the preloaded records are consumed", members, state, lambda: have_all(state, partitions, ends))
    result["committed_before_move"] = {str(p): o for p, o in sorted(client.committed(group, topic, partitions).items())}
    emit({"event": "ready_for_move"})
    # The members keep polling in their threads while the test moves the coordinator.
    import select
    ready, _, _ = select.select([sys.stdin], [], [], WAIT_S)
    if not ready:
        raise TimeoutError("no 'moved' line from the test")
    log("test says: %s" % sys.stdin.readline().strip())
    produce_round(client, topic, partitions, produce, "after-move")
    ends = [e + produce for e in ends]
    wait_until("records produced after the move are consumed", members, state,
               lambda: have_all(state, partitions, ends) and all_assigned())
    # The members commit after every batch (and retry a refused commit): the committed offsets
    # must reach the log end on the new coordinator.
    deadline = time.monotonic() + WAIT_S
    committed = {}
    while time.monotonic() < deadline:
        committed = client.committed(group, topic, partitions)
        if all(committed.get(p, -1) == ends[p] for p in range(partitions)):
            break
        time.sleep(0.5)
    result["committed_after_move"] = {str(p): o for p, o in sorted(committed.items())}
    result["assignment_after_move"] = {m.name: sorted(m.assignment()) for m in members}
    result["log_end"] = ends
