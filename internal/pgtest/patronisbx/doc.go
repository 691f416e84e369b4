// Package patronisbx starts, checks and stops a real 3-node Patroni + etcd
// cluster (PostgreSQL 15) for end-to-end tests, through the sandbox scripts
// vendored in sandbox/ (see sandbox/README.md).
//
// Up skips the test unless PATRONI_E2E=1, fails it when patroni or etcd is
// missing, and runs sandbox/up.sh, which is idempotent: it starts what is not
// running and waits until there is one leader and two streaming replicas. The
// layout is fixed so that tests of several packages share one cluster: BASE
// /tmp/doorman-e2e-sbx, NODE_IPS=1 (nodeN on 127.0.1.N), PostgreSQL on port
// 25432, the REST API on 28008, etcd on 127.0.0.1:22379/22380. Everything
// listens on loopback; as root, etcd, Patroni and PostgreSQL run as the
// postgres OS user.
//
// A Sandbox describes the nodes (Node: host, ports, API URL, unix socket
// and data directories) and acts on them: Cluster and Leader read /cluster
// through internal/patroni, WaitMember polls it, Pctl runs patronictl,
// StopPostgres and KillPostmaster take a node's PostgreSQL down behind
// Patroni's back, and WaitHealthy runs up.sh again. Methods that take a
// testing.TB fail the test on error and belong on the test's goroutine;
// FetchCluster, Patronictl, PostmasterPID and Down return errors for use
// elsewhere. A Sandbox holds no state beyond its paths and is safe for
// concurrent use; the cluster itself is shared, so tests using it must not
// run in parallel (go test -p 1 across packages).
//
// The cluster is deliberately left running when a test ends, so that the
// next test (or package) reuses it in seconds. `make test-e2e` tears it down
// with sandbox/down.sh and WIPE=1, pass or fail; Down does the same.
//
// Patroni REST API: https://patroni.readthedocs.io/en/latest/rest_api.html.
package patronisbx
