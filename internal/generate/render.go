package generate

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/doorman-go/doorman/internal/config"
)

// Plan is what Render writes: an inventory plus the listener and admin
// console settings of the new pg_doorman.
type Plan struct {
	Inventory     *Inventory
	ListenHost    string // general.host
	ListenPort    int    // general.port
	AdminUsername string
	AdminPassword string
	PoolSize      int // users[].pool_size
}

// Listener defaults of a generated file: all interfaces, PgBouncer's port
// (the documented general.port default, 5432, is PostgreSQL's own).
const (
	DefaultListenHost = "0.0.0.0"
	DefaultListenPort = 6432
)

// NewPlan returns a plan for inv with the default listener and a random
// admin password of 24 characters read from random (crypto/rand.Reader in
// production).
func NewPlan(inv *Inventory, random io.Reader) (*Plan, error) {
	b := make([]byte, 18)
	if _, err := io.ReadFull(random, b); err != nil {
		return nil, fmt.Errorf("random admin password: %w", err)
	}
	return &Plan{
		Inventory: inv, ListenHost: DefaultListenHost, ListenPort: DefaultListenPort,
		AdminUsername: "admin", AdminPassword: base64.RawURLEncoding.EncodeToString(b),
		PoolSize: config.DefaultUserPoolSize,
	}, nil
}

// Render writes a working configuration for p: one pool per database,
// pointing at the introspected server, each with every role that has a
// usable verifier (passed through, never plaintext). Keys are explained
// where they first appear: in the first pool and its first user.
func Render(w io.Writer, p *Plan, f Format, c Comments) error {
	inv := p.Inventory
	var usable []Role
	var noPass, badPass, reserved []string
	for _, r := range inv.Roles {
		switch {
		case r.Verifier == "":
			noPass = append(noPass, r.Name)
		case config.CheckVerifier(r.Verifier) != nil || strings.HasPrefix(r.Verifier, config.JWTKeyPrefix):
			badPass = append(badPass, r.Name)
		default:
			usable = append(usable, r)
		}
	}
	var pools []*node
	for _, db := range inv.Databases {
		if db == "pgdoorman" || db == "pgbouncer" {
			reserved = append(reserved, db)
			continue
		}
		pc := c
		if len(pools) > 0 {
			pc = NoComments
		}
		pools = append(pools, table(db, "",
			leaf("server_host", inv.ServerHost, pc.key("pools.server_host")),
			leaf("server_port", int64(inv.ServerPort), pc.key("pools.server_port")),
			leaf("pool_mode", config.DefaultPoolMode, pc.key("pools.pool_mode")),
			&node{key: "users", comment: pc.key("pools.users"), isItems: true, items: userNodes(usable, p.PoolSize, pc)}))
	}
	general := table("general", c.text("general"),
		leaf("host", p.ListenHost, c.key("general.host")),
		leaf("port", int64(p.ListenPort), c.key("general.port")),
		leaf("admin_username", p.AdminUsername, c.key("general.admin_username")),
		leaf("admin_password", p.AdminPassword, strings.Join(nonEmpty(c.key("general.admin_password"), c.text("generated.admin")), "\n")),
	)
	var header []string
	if c != NoComments {
		header = nonEmpty(strings.TrimSpace(c.text("generated")+" "+net.JoinHostPort(inv.ServerHost, strconv.Itoa(inv.ServerPort))+" "+sourceNote(inv.Source)),
			listNote(c, "generated.nopass", noPass), listNote(c, "generated.badpass", badPass), listNote(c, "generated.reserved", reserved))
	}
	return write(w, f, strings.Join(header, "\n"), []*node{general, table("pools", c.text("pools"), pools...)})
}

func userNodes(roles []Role, poolSize int, c Comments) [][]*node {
	items := make([][]*node, 0, len(roles))
	for i, r := range roles {
		uc := c
		if i > 0 {
			uc = NoComments
		}
		items = append(items, []*node{
			leaf("username", r.Name, uc.key("pools.users.username")),
			leaf("password", r.Verifier, uc.key("pools.users.password")),
			leaf("pool_size", int64(poolSize), uc.key("pools.users.pool_size")),
		})
	}
	return items
}

func sourceNote(source string) string {
	if source == "" {
		return ""
	}
	return "(" + source + ")"
}

func listNote(c Comments, name string, items []string) string {
	if len(items) == 0 {
		return ""
	}
	return c.text(name) + " " + strings.Join(items, ", ")
}
