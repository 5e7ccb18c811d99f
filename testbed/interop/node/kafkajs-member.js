// A KafkaJS group member for kafka-coop's test bed: the Java member's command line, RebalanceEvent
// lines, offsets committed by KafkaJS before it re-joins, a clean close (leave) on SIGTERM.
//
// KafkaJS 2.2.4 ships one assigner, RoundRobinAssigner (src/consumer/assigners), and rebalances eagerly
// only: it has no revoke callback, so this member reports `revoked` (everything it owned) on the
// REBALANCING instrumentation event and `assigned` (the whole new assignment) on GROUP_JOIN. "roundrobin"
// runs that same assigner under the protocol name the other families use, which is how a KafkaJS
// service shares a group with them (the protocol names must match for the broker to pick one).
'use strict'
const fs = require('fs')
const { Kafka, PartitionAssigners, logLevel } = require('kafkajs')

function fail(msg) {
  process.stderr.write(`error: ${msg}\n`)
  process.exit(2)
}

function parse(argv) {
  const o = { assignors: ['RoundRobinAssigner'], groupProtocol: 'classic', events: '-', close: 'default', processMs: 0, members: 1, props: {} }
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i]
    const v = argv[i + 1]
    if (v === undefined) fail(`missing value for ${k}`)
    switch (k) {
      case '--bootstrap': o.bootstrap = v; break
      case '--group': o.group = v; break
      case '--topics': o.topics = v.split(','); break
      case '--assignors': if (v) o.assignors = v.split(','); break
      case '--group-protocol': o.groupProtocol = v; break
      case '--remote-assignor': o.remoteAssignor = v; break
      case '--instance-id': o.instanceId = v; break
      case '--client-id': o.clientId = v; break
      case '--events': o.events = v; break
      case '--records': o.records = v; break
      case '--close': o.close = v; break
      case '--process-ms': o.processMs = parseInt(v, 10); break
      case '--members': o.members = parseInt(v, 10); break
      case '--prop': { const eq = v.indexOf('='); if (eq <= 0) fail(`--prop expects key=value, got ${v}`); o.props[v.slice(0, eq)] = v.slice(eq + 1); break }
      default: fail(`unknown option ${k}`)
    }
  }
  if (!o.bootstrap || !o.group || !o.topics) fail('--bootstrap, --group and --topics are required')
  if (o.members !== 1) fail('this member runs one consumer per process; use --members 1')
  if (o.groupProtocol !== 'classic') fail('KafkaJS does not speak the KIP-848 consumer group protocol; use --group-protocol classic')
  if (o.instanceId) fail('KafkaJS has no static membership (its JoinGroup sends no group instance id); drop --instance-id')
  if (o.close !== 'default') fail('KafkaJS always leaves the group on disconnect; use --close default')
  if (Object.keys(o.props).length) fail('KafkaJS takes options in code, not properties; drop --prop')
  return o
}

function assigner(name) {
  if (name === 'RoundRobinAssigner') return PartitionAssigners.roundRobin
  if (name === 'roundrobin') return config => ({ ...PartitionAssigners.roundRobin(config), name: 'roundrobin' })
  fail(`KafkaJS has no assignor ${name} (it ships RoundRobinAssigner; "roundrobin" runs it under the common name)`)
}

const o = parse(process.argv.slice(2))
const clientId = o.clientId || 'kafkajs'
const eventsFd = o.events === '-' ? 1 : fs.openSync(o.events, 'a')
const recordsFd = o.records ? fs.openSync(o.records, 'a') : null
const owned = new Map() // "topic\0partition" -> [topic, partition]
let seq = 0
let memberId = ''

function sorted(tps) {
  return [...tps].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]))
}

function emit(kind, parts, committed) {
  const t0 = process.hrtime.bigint()
  for (const tp of parts) {
    const key = `${tp[0]}\0${tp[1]}`
    if (kind === 'assigned') owned.set(key, tp)
    else owned.delete(key)
  }
  const line = JSON.stringify({
    v: 1, ts_ms: Date.now(), seq: seq++, group: o.group, member_id: memberId, instance_id: null,
    client_id: clientId, protocol: 'eager', kind, partitions: sorted(parts), owned: sorted(owned.values()),
    callback_ms: Number(process.hrtime.bigint() - t0) / 1e6, committed, error: null,
  })
  fs.writeSync(eventsFd, line + '\n')
}

const kafka = new Kafka({ clientId, brokers: o.bootstrap.split(','), logLevel: logLevel.WARN })
const consumer = kafka.consumer({ groupId: o.group, partitionAssigners: o.assignors.map(assigner) })

consumer.on(consumer.events.REBALANCING, e => {
  memberId = e.payload.memberId || memberId
  if (owned.size) emit('revoked', [...owned.values()], null)
})
consumer.on(consumer.events.GROUP_JOIN, e => {
  memberId = e.payload.memberId
  if (owned.size) emit('revoked', [...owned.values()], null)
  const parts = []
  for (const [topic, partitions] of Object.entries(e.payload.memberAssignment)) {
    for (const p of partitions) parts.push([topic, p])
  }
  emit('assigned', parts, null)
})

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

async function main() {
  await consumer.connect()
  await consumer.subscribe({ topics: o.topics, fromBeginning: true })
  await consumer.run({
    autoCommitInterval: 1000,
    eachMessage: async ({ topic, partition, message }) => {
      if (o.processMs > 0) await sleep(o.processMs)
      if (recordsFd !== null) {
        fs.writeSync(recordsFd, `${clientId} ${topic} ${partition} ${message.offset} ${message.timestamp} ${Date.now()}\n`)
      }
    },
  })
  process.stdout.write('READY 1\n')
}

let closing = false
async function close() {
  if (closing) return
  closing = true
  try {
    await consumer.disconnect() // stops the runner (its last auto-commit), then LeaveGroup
  } finally {
    if (owned.size) emit('revoked', [...owned.values()], null)
    if (recordsFd !== null) fs.closeSync(recordsFd)
    if (eventsFd !== 1) fs.closeSync(eventsFd)
    process.exit(0)
  }
}
process.on('SIGTERM', close)
process.on('SIGINT', close)
main().catch(e => {
  process.stderr.write(`member failed: ${e.stack || e}\n`)
  process.exit(1)
})
