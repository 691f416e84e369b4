// Cancels a running query the node-postgres way: Client.cancel opens a
// second connection that sends a CancelRequest. If the server ends that
// connection with a reset, node-postgres has no 'error' listener on it and
// the whole process dies with "Error: read ECONNRESET".
const { Client } = require('pg');

async function main() {
  const client = new Client();
  await client.connect();
  const running = client.query("SELECT pg_sleep(30) /* node cancel */").then(
    () => 'no error',
    (err) => err.code,
  );
  // Wait until the query runs on a backend (seen by a second client).
  const watcher = new Client();
  await watcher.connect();
  for (let i = 0; ; i++) {
    const r = await watcher.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30) /* node cancel */' AND state = 'active'");
    if (r.rows[0].n === 1) break;
    if (i > 1000) throw new Error('query never became active');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const canceller = new Client();
  // The cancel connection's socket closes after the server's answer; a
  // reset surfaces as an unhandled 'error' before 'close'.
  const closed = new Promise((resolve) => canceller.connection.stream.once('close', resolve));
  canceller.cancel(client, client.activeQuery);
  const code = await running;
  await closed;
  await watcher.end();
  await client.end();
  console.log(`ok node-postgres cancel ${code}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
