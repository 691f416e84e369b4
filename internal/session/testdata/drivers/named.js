'use strict'
// node-postgres named queries against pg_doorman (or PostgreSQL itself, to
// check that every expectation below is PostgreSQL's behaviour).
//
// Usage: node named.js [clients] [iterations]
// The connection comes from the libpq environment variables node-postgres
// reads: PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
// Prints "ok node-postgres N clients M queries" and exits 0, or prints what
// went wrong and exits 1.
//
// node-postgres sends a named query as Parse(name) Bind Describe(P) Execute
// Sync the first time on a connection, and Bind Describe Execute Sync after
// that: the Parse happened on whatever server the pooler picked back then.
const { Client } = require('pg')

const clients = Number(process.argv[2] || process.env.CLIENTS || 12)
const iterations = Number(process.argv[3] || process.env.ITERATIONS || 20)

function fail(msg) {
  console.error('FAIL: ' + msg)
  process.exit(1)
}

setTimeout(() => fail('timeout after 20 s'), 20000).unref()

function expectEq(got, want, what) {
  if (String(got) !== String(want)) {
    throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`)
  }
}

async function expectError(c, query, code, what) {
  try {
    await c.query(query)
  } catch (e) {
    if (e.code !== code) {
      throw new Error(`${what}: got error ${e.code} "${e.message}", want SQLSTATE ${code}`)
    }
    return
  }
  throw new Error(`${what}: succeeded, want SQLSTATE ${code}`)
}

// Every client uses the same names; q1 has different SQL on each client.
const shared = 'SELECT $1::int * 2 AS v, $2::text AS s'
const div = 'SELECT 100 / $1::int AS v'

async function iteration(c, i, j) {
  let n = 0
  let r = await c.query({ name: 'q1', text: `SELECT ${i * 1000} + $1::int AS v`, values: [j] })
  expectEq(r.rows[0].v, i * 1000 + j, `q1 (client SQL) iteration ${j}`)
  r = await c.query({ name: 'shared', text: shared, values: [i * 100 + j, `c${i}`] })
  expectEq(r.rows[0].v, 2 * (i * 100 + j), `shared iteration ${j}`)
  expectEq(r.rows[0].s, `c${i}`, `shared text iteration ${j}`)
  r = await c.query('SELECT $1::text || $2::text AS s', [`c${i}`, `-${j}`]) // unnamed
  expectEq(r.rows[0].s, `c${i}-${j}`, `unnamed iteration ${j}`)
  n += 3
  if (j % 4 === 1) {
    // An error in Execute, then the same statement again.
    await expectError(c, { name: 'div', text: div, values: [0] }, '22012', 'division by zero')
    r = await c.query({ name: 'div', text: div, values: [j + 1] })
    expectEq(r.rows[0].v, Math.floor(100 / (j + 1)), 'div after the error')
    n += 2
  }
  if (j % 5 === 2) {
    // An error in Bind of a statement parsed earlier, maybe on another server.
    await expectError(c, { name: 'shared', text: shared, values: ['not a number', 'x'] }, '22P02', 'bad parameter')
    n++
  }
  if (j % 6 === 3) {
    // Named statements inside a transaction, an error, the rest of the
    // transaction refused, rollback, then the names still work.
    await c.query('BEGIN')
    r = await c.query({ name: 'q1', text: `SELECT ${i * 1000} + $1::int AS v`, values: [-j] })
    expectEq(r.rows[0].v, i * 1000 - j, 'q1 in a transaction')
    await expectError(c, { name: 'div', text: div, values: [0] }, '22012', 'division by zero in a transaction')
    await expectError(c, { name: 'shared', text: shared, values: [1, 'x'] }, '25P02', 'statement in a failed transaction')
    await c.query('ROLLBACK')
    n += 5
  }
  return n
}

async function runClient(i) {
  const c = new Client()
  await c.connect()
  let n = 0
  try {
    // A Parse that fails leaves the name free, as in PostgreSQL.
    await expectError(c, { name: 'first', text: 'SELEC 1' }, '42601', 'syntax error in Parse')
    const r = await c.query({ name: 'first', text: `SELECT ${i} AS v` })
    expectEq(r.rows[0].v, i, 'the name of a failed Parse, used again')
    n += 2
    for (let j = 0; j < iterations; j++) {
      n += await iteration(c, i, j)
    }
  } catch (e) {
    throw new Error(`client ${i}: ${e.message}`)
  } finally {
    await c.end()
  }
  return n
}

async function main() {
  const runs = []
  for (let i = 0; i < clients; i++) runs.push(runClient(i))
  const counts = await Promise.all(runs)
  const total = counts.reduce((a, b) => a + b, 0)
  console.log(`ok node-postgres ${clients} clients ${total} queries`)
}

main().catch((e) => fail(e.message))
