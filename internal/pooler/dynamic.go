package pooler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/authquery"
	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/config"
)

// DynamicStats count the pools auth_query created and collected.
type DynamicStats struct {
	Current            int
	Created, Collected uint64
}

// AuthQuery returns the resolver of db's auth_query, nil when db has none.
func (r *Registry) AuthQuery(db string) *authquery.Resolver {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.resolvers[db]
}

// Resolvers lists the auth_query resolvers sorted by database.
func (r *Registry) Resolvers() []*authquery.Resolver {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*authquery.Resolver, 0, len(r.resolvers))
	for _, name := range sortedKeys(r.resolvers) {
		out = append(out, r.resolvers[name])
	}
	return out
}

// Dynamic reports the auth_query pools of db.
func (r *Registry) Dynamic(db string) DynamicStats {
	r.mu.RLock()
	defer r.mu.RUnlock()
	st := DynamicStats{Created: r.dynCreated[db], Collected: r.dynCollected[db]}
	for k, p := range r.pools {
		if k.db == db && p.dynamic {
			st.Current++
		}
	}
	return st
}

// AuthQueryPool returns the pool of a client that authenticated as user
// against verifier, looked up by db's auth_query. In passthrough mode
// (no server_user) each user has a pool of its own, logging in to
// PostgreSQL as that user with the verifier (MD5) or the client's SCRAM
// keys; it is created on first use and takes a changed verifier. In
// dedicated mode every such user shares one pool logging in as
// server_user.
func (r *Registry) AuthQueryPool(db, user, verifier string) (*Pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	dbc := r.cfg.Pools[db]
	if dbc == nil || dbc.AuthQuery == nil {
		return nil, fmt.Errorf("database %q has no auth_query", db)
	}
	k := dynamicKey(dbc, user)
	p := r.pools[k]
	switch {
	case p == nil:
		p = newPool(dynamicSettings(r.cfg, dbc, user, verifier), r)
		p.dynamic = true
		r.pools[k] = p
		r.dynCreated[db]++
		if c := r.coords[db]; c != nil {
			p.coord.Store(c.Register(p.User, p.Settings().User.MinPoolSize, member{p}))
		}
		if r.log != nil {
			r.log.Info("auth_query pool created", zap.String("database", db), zap.String("user", p.User))
		}
	case dbc.AuthQuery.ServerUser == "" && p.Settings().User.Password != verifier:
		p.apply(dynamicSettings(r.cfg, dbc, user, verifier)) // the password changed in PostgreSQL
	}
	p.lastUsed.Store(time.Now().UnixNano())
	return p, nil
}

// dynamicKey is where the pool of an auth_query user lives in r.pools:
// the user's own (passthrough) or the shared server_user one, which is
// kept apart from a static user of the same name.
func dynamicKey(db *config.Pool, user string) key {
	if su := db.AuthQuery.ServerUser; su != "" {
		return key{db: db.Name, user: su, dedicated: true}
	}
	return key{db: db.Name, user: user}
}

// dynamicSettings is the configuration of an auth_query pool: sizes from
// the auth_query block, the rest from the database.
func dynamicSettings(cfg *config.Config, db *config.Pool, user, verifier string) *Settings {
	aq := db.AuthQuery
	u := &config.User{
		Username:       user,
		Password:       verifier,
		PoolSize:       aq.PoolSize,
		MinPoolSize:    aq.MinPoolSize,
		ServerLifetime: db.ServerLifetime,
		PoolMode:       db.PoolMode,
	}
	if aq.ServerUser != "" {
		u.Username, u.Password = aq.ServerUser, ""
		u.ServerUsername, u.ServerPassword = aq.ServerUser, aq.ServerPassword
	}
	return &Settings{General: &cfg.General, DB: db, User: u}
}

// applyDynamicLocked gives the auth_query pools kept by a reload their new
// settings and reports whether p stays: its database still has auth_query
// in the same mode (for dedicated, the same server_user).
func applyDynamicLocked(cfg *config.Config, k key, p *Pool) bool {
	db := cfg.Pools[k.db]
	if db == nil || db.AuthQuery == nil || dynamicKey(db, k.user) != k {
		return false
	}
	p.apply(dynamicSettings(cfg, db, p.User, p.Settings().User.Password))
	return true
}

// applyResolversLocked builds the auth_query resolvers of cfg; the old
// ones are returned for closing. The cache starts empty on every reload,
// as the seed documents.
func (r *Registry) applyResolversLocked(cfg *config.Config) []*authquery.Resolver {
	var old []*authquery.Resolver
	for _, res := range r.resolvers {
		old = append(old, res)
	}
	r.resolvers = map[string]*authquery.Resolver{}
	for name, db := range cfg.Pools {
		aq := db.AuthQuery
		if aq == nil {
			continue
		}
		r.resolvers[name] = authquery.New(authquery.Config{
			Database: name,
			Query:    aq.Query,
			Workers:  aq.Workers,
			Cache: authquery.CacheConfig{
				TTL: aq.CacheTTL, FailureTTL: aq.CacheFailureTTL, MinInterval: aq.MinInterval,
				FetchTimeout: lookupTimeout(db),
			},
		}, r.executorDial(cfg, db), time.Now)
	}
	return old
}

// lookupTimeout bounds one lookup: a connect and a short query.
func lookupTimeout(db *config.Pool) time.Duration {
	return max(db.ConnectTimeout, time.Second) + 5*time.Second
}

// executorDial opens auth_query executor connections: the database's
// server, as auth_query.user into auth_query.database.
func (r *Registry) executorDial(cfg *config.Config, db *config.Pool) authquery.Dial {
	s := &Settings{General: &cfg.General, DB: db}
	aq := db.AuthQuery
	return func(ctx context.Context) (*backend.Conn, error) {
		o, err := baseOptions(s, r.ServerTLSObserver())
		if err != nil {
			return nil, err
		}
		o.Database = aq.Database
		o.Params = [][2]string{{"application_name", "pg_doorman auth_query"}}
		o.Credentials = secretCredentials(aq.User, aq.Password)
		return backend.Connect(ctx, o)
	}
}

// collectDynamic closes auth_query pools nobody uses: no client, no server
// connection, not handed out for a retain interval, and min_pool_size 0
// (such pools are kept, as the seed documents).
func (r *Registry) collectDynamic(idleFor time.Duration) {
	cutoff := time.Now().Add(-idleFor).UnixNano()
	var gone []*Pool
	r.mu.Lock()
	for k, p := range r.pools {
		if !p.dynamic || p.Settings().User.MinPoolSize > 0 || p.Stats.Clients.Load() > 0 ||
			p.lastUsed.Load() > cutoff || p.conns.Load().Total > 0 {
			continue
		}
		delete(r.pools, k)
		r.dynCollected[k.db]++
		if u := p.coord.Swap(nil); u != nil {
			u.Unregister()
		}
		gone = append(gone, p)
	}
	r.mu.Unlock()
	for _, p := range gone {
		p.close()
		if r.log != nil {
			r.log.Info("auth_query pool collected", zap.String("database", p.Database), zap.String("user", p.User))
		}
	}
}

// warmResolvers opens the executor connections of resolvers not warmed yet.
func (r *Registry) warmResolvers(ctx context.Context) {
	for _, res := range r.Resolvers() {
		if !res.MarkWarmed() {
			continue
		}
		if err := res.Warm(ctx); err != nil && !errors.Is(err, context.Canceled) && r.log != nil {
			r.log.Warn("auth_query connections not opened", zap.String("database", res.Database), zap.Error(err))
		}
	}
}
