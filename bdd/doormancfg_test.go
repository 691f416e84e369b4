package bdd

import (
	"fmt"
	"strings"
)

// Admin console credentials of every pg_doorman the scenarios start.
const (
	adminUser     = "admin"
	adminPassword = "admin-secret"
)

// doormanConfig is the part of pg_doorman's YAML the scenarios vary.
type doormanConfig struct {
	Port            int
	SocketDir       string
	ShutdownTimeout string // "" leaves the default
	ServerPort      int    // PostgreSQL's TCP port
	Pools           []poolConfig
	Extra           string // a line that does not belong, for broken configs
}

type poolConfig struct {
	Name  string // database name clients use, also the server database
	Mode  string // transaction or session
	Users []userConfig
}

type userConfig struct {
	Name     string
	Verifier string // as stored in pg_authid: SCRAM or MD5
	PoolSize int
}

// addPool adds a pool, or a user to the pool of that name.
func (c *doormanConfig) addPool(db, mode string, u userConfig) {
	for i := range c.Pools {
		if c.Pools[i].Name == db {
			c.Pools[i].Users = append(c.Pools[i].Users, u)
			return
		}
	}
	c.Pools = append(c.Pools, poolConfig{Name: db, Mode: mode, Users: []userConfig{u}})
}

// YAML renders the config file.
func (c doormanConfig) YAML() string {
	var b strings.Builder
	b.WriteString("general:\n")
	fmt.Fprintf(&b, "  host: 127.0.0.1\n  port: %d\n  unix_socket_dir: %q\n", c.Port, c.SocketDir)
	fmt.Fprintf(&b, "  admin_username: %s\n  admin_password: %s\n", adminUser, adminPassword)
	if c.ShutdownTimeout != "" {
		fmt.Fprintf(&b, "  shutdown_timeout: %s\n", c.ShutdownTimeout)
	}
	if c.Extra != "" {
		fmt.Fprintf(&b, "  %s\n", c.Extra)
	}
	b.WriteString("pools:\n")
	for _, p := range c.Pools {
		fmt.Fprintf(&b, "  %s:\n    server_host: 127.0.0.1\n    server_port: %d\n    pool_mode: %s\n    users:\n",
			p.Name, c.ServerPort, p.Mode)
		for _, u := range p.Users {
			fmt.Fprintf(&b, "      - username: %s\n        password: '%s'\n        pool_size: %d\n",
				u.Name, u.Verifier, u.PoolSize)
		}
	}
	return b.String()
}
