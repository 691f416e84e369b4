package bdd

import (
	"fmt"
	"sync"

	"github.com/doorman-go/doorman/internal/pgtest"
)

// suiteEnv is what the scenarios of one run share: a single PostgreSQL
// server, started by the first scenario that asks for one (starting one
// per scenario costs seconds on a busy machine), and the roles made on it.
// Each scenario creates its own databases and drops them, with every
// connection to them, when it ends, so scenarios do not see each other.
type suiteEnv struct {
	mu      sync.Mutex // guards the fields below
	pg      *pgtest.Cluster
	stop    func()
	users   map[string]pgUser
	started bool
	err     error
}

// pgUser is a role made by an earlier step.
type pgUser struct {
	password, method, verifier string
}

// postgres returns the shared server, starting it on first use.
func (e *suiteEnv) postgres() (*pgtest.Cluster, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		e.started = true
		e.pg, e.stop, e.err = pgtest.StartMain(pgtest.Options{MaxConnections: 100})
		if e.err != nil {
			e.err = fmt.Errorf("start PostgreSQL: %w", e.err)
		}
	}
	return e.pg, e.err
}

// user returns the verifier of a role, creating it on first use. A role
// keeps its password for the whole run.
func (e *suiteEnv) user(t *scenarioT, name, password, method string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if u, ok := e.users[name]; ok {
		if u.password != password || u.method != method {
			return "", fmt.Errorf("user %s was created by an earlier scenario with another password or method: pick another name", name)
		}
		return u.verifier, nil
	}
	verifier := e.pg.CreateUser(t, name, password, method)
	if e.users == nil {
		e.users = map[string]pgUser{}
	}
	e.users[name] = pgUser{password: password, method: method, verifier: verifier}
	return verifier, nil
}

// close stops the server, if one was started.
func (e *suiteEnv) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
}
