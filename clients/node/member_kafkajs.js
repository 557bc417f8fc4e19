// kafkajs adapter for `groupsim check-client` (sim/src/check_client/): one consumer-group
// member per process, the application clients/python/member.py describes, written for kafkajs.
// kafkajs is used the way its users use it: consumer.run with eachBatch, resolving each offset
// after its record is processed and written; commit modes:
//   auto    kafkajs's autoCommit (commits resolved offsets, i.e. processed records)
//   sync    commitOffsets() after every batch
//   before  WRONG on purpose: commits the batch's offsets before processing it
// Each batch's processed lines are written with fs.writeSync (straight to the kernel) before any
// commit covering them. Arguments key=value: bootstrap topic group client_id commit out
// [work_ms] [session_timeout_ms] [assignor]. SIGTERM disconnects (leaves the group) and exits.
// `node member_kafkajs.js --capabilities` prints what the installed kafkajs offers as one JSON
// line (see clients/python/member.py): its commit modes, and as classic assignors the partition
// assigners it ships (PartitionAssigners; roundRobin is "roundrobin"). kafkajs speaks only the
// classic group protocol. Works with kafkajs 1.16 to 2.x.
'use strict';

const fs = require('fs');

// kafkajs from the folder groupsim names (GROUPSIM_NODE_MODULES: the folder whose node_modules
// holds it) before any node_modules beside this script, so the release asked for is the one run.
const fromChosen = (name) => {
  const chosen = process.env.GROUPSIM_NODE_MODULES;
  return require(chosen ? require.resolve(name, { paths: [chosen] }) : name);
};

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const log = (msg) => process.stderr.write(`[member ${Date.now() / 1000}] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function parseArgs(argv) {
  const args = {};
  for (const a of argv) {
    const i = a.indexOf('=');
    if (i < 0) throw new Error(`argument ${JSON.stringify(a)} is not key=value`);
    args[a.slice(0, i)] = a.slice(i + 1);
  }
  for (const key of ['bootstrap', 'topic', 'group', 'client_id', 'commit', 'out']) {
    if (!(key in args)) throw new Error(`missing argument ${key}=...`);
  }
  if (!['auto', 'sync', 'before'].includes(args.commit)) {
    throw new Error(`commit=${args.commit}: kafkajs adapter offers auto, sync, before`);
  }
  return args;
}

// groupsim's assignor names for kafkajs's built-in partition assigners.
const ASSIGNERS = { roundRobin: 'roundrobin', range: 'range' };

function capabilities() {
  const { PartitionAssigners } = fromChosen('kafkajs');
  const classic = Object.keys(PartitionAssigners || {}).filter((k) => k in ASSIGNERS).map((k) => ASSIGNERS[k]);
  return {
    event: 'capabilities',
    client: 'kafkajs',
    version: fromChosen('kafkajs/package.json').version,
    modes: ['sync', 'auto'],
    group_protocols: { classic },
  };
}

async function main() {
  if (process.argv.length === 3 && process.argv[2] === '--capabilities') {
    emit(capabilities());
    return;
  }
  const args = parseArgs(process.argv.slice(2));
  const { Kafka, logLevel, PartitionAssigners } = fromChosen('kafkajs');
  const assignor = args.assignor || 'roundrobin';
  const assigner = Object.keys(ASSIGNERS).find((k) => ASSIGNERS[k] === assignor);
  if (!assigner || !PartitionAssigners[assigner]) {
    throw new Error(`assignor=${assignor}: this kafkajs offers ${capabilities().group_protocols.classic.join(', ')}`);
  }
  log(`chose commit=${args.commit} assignor=${assignor} group_protocol=classic`);
  const version = fromChosen('kafkajs/package.json').version;
  const workMs = Number(args.work_ms || '2');
  const out = fs.openSync(args.out, 'a');
  const kafka = new Kafka({
    clientId: args.client_id,
    brokers: args.bootstrap.split(','),
    logLevel: logLevel.ERROR,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 100 },
  });
  const consumer = kafka.consumer({
    groupId: args.group,
    sessionTimeout: Number(args.session_timeout_ms || '6000'),
    heartbeatInterval: 500,
    rebalanceTimeout: 10000,
    maxBytesPerPartition: 4096,
    maxWaitTimeInMs: 200,
    // As every adapter: new partitions are seen within seconds, as a heal phase needs.
    metadataMaxAge: 2000,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 100 },
    partitionAssigners: [PartitionAssigners[assigner]],
  });
  consumer.on(consumer.events.CRASH, (e) => log(`crash: ${e.payload.error && e.payload.error.message}`));
  let stopping = false;
  process.on('SIGTERM', async () => {
    if (stopping) return;
    stopping = true;
    log('SIGTERM: closing');
    try {
      await consumer.disconnect();
    } catch (e) {
      log(`disconnect: ${e.message}`);
    }
    emit({ event: 'closed' });
    process.exit(0);
  });
  // Exit when the campaign that started us is gone (it would have SIGKILLed us).
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(4);
  }, 500).unref();
  // Sync mode: offsets processed but not yet committed, by partition. A refused commit (a
  // rebalance, a coordinator moving) is retried every 500 ms; a new generation forgets them
  // (kafkajs commits under the current generation, and those partitions may be someone else's).
  const pending = new Map();
  const commitPending = async () => {
    if (pending.size === 0) return;
    const offsets = [...pending.values()];
    try {
      await consumer.commitOffsets(offsets);
      for (const o of offsets) {
        const key = `${o.topic}:${o.partition}`;
        if (pending.get(key) === o) pending.delete(key);
      }
    } catch (e) {
      log(`commit: ${e.message}`);
    }
  };
  consumer.on(consumer.events.GROUP_JOIN, () => pending.clear());
  setInterval(() => { commitPending(); }, 500).unref();
  await consumer.connect();
  await consumer.subscribe({ topic: args.topic, fromBeginning: true });
  emit({ event: 'ready', client: 'kafkajs', version, assignor, commit: args.commit, group_protocol: 'classic' });
  await consumer.run({
    autoCommit: args.commit === 'auto',
    autoCommitInterval: 500,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      const msgs = batch.messages;
      if (msgs.length === 0) return;
      const next = (o) => String(Number(o) + 1);
      if (args.commit === 'before') {
        try {
          await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next(msgs[msgs.length - 1].offset) }]);
        } catch (e) {
          log(`commit before processing: ${e.message}`);
        }
      }
      let lines = '';
      let last = null;
      for (const m of msgs) {
        if (!isRunning() || isStale()) break;
        if (workMs) await sleep(workMs);
        lines += JSON.stringify({ client: args.client_id, topic: batch.topic, partition: batch.partition, offset: Number(m.offset), ts: Date.now() }) + '\n';
        last = m.offset;
      }
      if (last === null) return;
      fs.writeSync(out, lines);
      for (const m of msgs) {
        resolveOffset(m.offset);
        if (m.offset === last) break;
      }
      if (args.commit === 'sync') {
        const key = `${batch.topic}:${batch.partition}`;
        pending.set(key, { topic: batch.topic, partition: batch.partition, offset: next(last) });
        await commitPending();
      }
      await heartbeat();
    },
  });
}

main().catch((e) => {
  log(`FAILED: ${e && e.stack ? e.stack : e}`);
  process.exit(3);
});
