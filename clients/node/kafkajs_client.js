// kafkajs conformance client for `groupsim serve`: the same "group" scenario as
// clients/python/harness.py (see there), written for kafkajs. Driven by
// scenarios/tests/real_clients.rs. Usage:
//   node kafkajs_client.js bootstrap=HOST:PORT,... topic=T group=G partitions=N preload=N
// Prints JSON lines; the last one is {"event": "result", ...}. Every wait is bounded.
'use strict';

const { Kafka, logLevel } = require('kafkajs');

const WAIT_MS = 45000;
const T0 = Date.now();
const log = (msg) => process.stderr.write(`[kafkajs ${((Date.now() - T0) / 1000).toFixed(1)}] ${msg}\n`);
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const args = Object.fromEntries(process.argv.slice(2).filter((a) => a.includes('=')).map((a) => {
  const i = a.indexOf('=');
  return [a.slice(0, i), a.slice(i + 1)];
}));
const topic = args.topic;
const groupId = args.group;
const partitions = Number(args.partitions);
const preload = Number(args.preload);
const produceCount = Number(args.produce || '5');

const kafka = new Kafka({
  clientId: 'kafkajs',
  brokers: args.bootstrap.split(','),
  logLevel: logLevel.WARN,
  connectionTimeout: 3000,
  requestTimeout: 10000,
  retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 10 },
});

const consumed = new Map(); // partition -> [offsets]
const notes = [];

class Member {
  constructor(name) {
    this.name = name;
    this.assigned = [];
    this.records = [];
    this.error = null;
    this.consumer = kafka.consumer({
      groupId,
      sessionTimeout: 6000,
      heartbeatInterval: 500,
      rebalanceTimeout: 30000,
      maxWaitTimeInMs: 200,
      retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 10 },
    });
    const { GROUP_JOIN, CRASH } = this.consumer.events;
    this.consumer.on(GROUP_JOIN, (e) => {
      this.assigned = (e.payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b);
    });
    this.consumer.on(CRASH, (e) => {
      this.error = `${this.name}: crash: ${e.payload.error && e.payload.error.message}`;
    });
  }

  async start() {
    await this.consumer.connect();
    await this.consumer.subscribe({ topic, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat }) => {
        if (batch.messages.length === 0) return;
        for (const m of batch.messages) {
          const offset = Number(m.offset);
          this.records.push([batch.partition, offset]);
          if (!consumed.has(batch.partition)) consumed.set(batch.partition, []);
          consumed.get(batch.partition).push(offset);
        }
        const next = String(Number(batch.lastOffset()) + 1);
        try {
          await this.consumer.commitOffsets([{ topic, partition: batch.partition, offset: next }]);
        } catch (e) {
          notes.push(`${this.name} commit: ${e.message}`);
          throw e; // kafkajs re-fetches from the committed offset after a rebalance
        }
        await heartbeat();
      },
    });
  }

  async close() {
    await this.consumer.disconnect();
    this.assigned = [];
  }
}

async function waitUntil(what, members, cond, timeout = WAIT_MS) {
  const deadline = Date.now() + timeout;
  let nextReport = Date.now() + 5000;
  while (Date.now() < deadline) {
    const failed = members.filter((m) => m.error).map((m) => m.error);
    if (failed.length) throw new Error(failed.join('; '));
    if (cond()) {
      log(`ok: ${what}`);
      return;
    }
    if (Date.now() > nextReport) {
      nextReport += 5000;
      const a = Object.fromEntries(members.map((m) => [m.name, m.assigned]));
      log(`waiting for ${what}: assignments ${JSON.stringify(a)}`);
    }
    await sleep(50);
  }
  throw new Error(`timed out after ${timeout / 1000}s waiting for: ${what}`);
}

function haveAll(ends) {
  for (let p = 0; p < partitions; p++) {
    const seen = new Set(consumed.get(p) || []);
    for (let o = 0; o < ends[p]; o++) if (!seen.has(o)) return false;
  }
  return true;
}

const union = (members) => new Set(members.flatMap((m) => m.assigned));

async function produceRound(tag) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    const messages = [];
    for (let p = 0; p < partitions; p++) {
      for (let i = 0; i < produceCount; i++) messages.push({ partition: p, value: `${topic}-${p}-${tag}-${i}` });
    }
    await producer.send({ topic, acks: -1, messages });
    log(`produced ${messages.length} records (${tag})`);
  } finally {
    await producer.disconnect();
  }
}

async function committed() {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const res = await admin.fetchOffsets({ groupId, topics: [topic] });
    const out = {};
    for (const p of res[0].partitions) out[String(p.partition)] = Number(p.offset);
    return out;
  } finally {
    await admin.disconnect();
  }
}

async function scenario(result, members) {
  let ends = new Array(partitions).fill(preload);
  const trio = ['m0', 'm1', 'm2'].map((n) => new Member(n));
  members.push(...trio);
  await Promise.all(trio.map((m) => m.start()));
  await waitUntil('three members share the partitions', trio, () =>
    trio.every((m) => m.assigned.length) && union(trio).size === partitions &&
    trio.reduce((n, m) => n + m.assigned.length, 0) === partitions);
  await waitUntil('the preloaded records are consumed', trio, () => haveAll(ends));
  result.assignment_of_three = Object.fromEntries(trio.map((m) => [m.name, m.assigned]));

  const leaver = trio[2];
  const leaverPartitions = leaver.assigned.slice();
  await leaver.close();
  log(`m2 left, it had ${JSON.stringify(leaverPartitions)}`);
  const pair = trio.slice(0, 2);
  await waitUntil("the two others take over the leaver's partitions", pair, () =>
    pair.every((m) => m.assigned.length) && union(pair).size === partitions);
  result.assignment_of_two = Object.fromEntries(pair.map((m) => [m.name, m.assigned]));
  result.leaver_partitions = leaverPartitions;

  await produceRound('b');
  ends = ends.map((e) => e + produceCount);
  await waitUntil('the records produced after the leave are consumed', pair, () => haveAll(ends));
  const taken = new Set();
  for (const m of pair) for (const [p, o] of m.records) if (leaverPartitions.includes(p) && o >= preload) taken.add(p);
  result.taken_over_partitions = [...taken].sort((a, b) => a - b);

  for (const m of pair) await m.close();
  await produceRound('c');
  result.committed_before_restart = await committed();
  const mark = {};
  const before = {};
  for (let p = 0; p < partitions; p++) {
    const offs = consumed.get(p) || [];
    mark[p] = offs.length;
    before[String(p)] = offs.length ? Math.max(...offs) + 1 : 0;
  }
  result.consumed_before_restart = before;

  const restarted = ['r0', 'r1'].map((n) => new Member(n));
  members.push(...restarted);
  await Promise.all(restarted.map((m) => m.start()));
  ends = ends.map((e) => e + produceCount);
  await waitUntil('after the restart every later record is consumed', restarted, () => haveAll(ends));
  result.first_after_restart = {};
  for (let p = 0; p < partitions; p++) {
    const offs = consumed.get(p) || [];
    result.first_after_restart[String(p)] = offs.length > mark[p] ? offs[mark[p]] : null;
  }
  result.log_end = ends;
}

async function main() {
  const result = { event: 'result', client: 'kafkajs', scenario: 'group' };
  const members = [];
  const watchdog = setTimeout(() => {
    result.ok = false;
    result.error = 'watchdog: the scenario took longer than 150 s';
    emit(result);
    process.exit(3);
  }, 150000);
  try {
    if ((args.scenario || 'group') !== 'group') throw new Error(`unknown scenario ${args.scenario}`);
    await scenario(result, members);
    result.ok = true;
  } catch (e) {
    result.ok = false;
    result.error = String(e && e.stack ? e.stack.split('\n')[0] : e);
    log(`FAILED: ${result.error}`);
  } finally {
    for (const m of members) {
      try {
        await m.close();
      } catch (e) {
        log(`closing ${m.name}: ${e.message}`);
      }
    }
  }
  result.consumed = Object.fromEntries([...consumed.entries()].sort((a, b) => a[0] - b[0]).map(([p, o]) => [String(p), o]));
  result.notes = notes.slice(0, 20);
  emit(result);
  clearTimeout(watchdog);
  process.exit(0);
}

main();
