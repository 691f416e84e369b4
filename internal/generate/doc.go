// Package generate writes pg_doorman configuration files: a working one
// from a live PostgreSQL (pg_doorman generate) and a reference one with
// every key and its default (pg_doorman generate --reference).
//
// Introspect connects with pgx (Options, defaulting to the libpq
// environment) and returns an Inventory: the databases that accept
// connections and the login roles with their password verifiers, read
// from pg_authid (or pg_shadow) and copied as stored, so pg_doorman
// authenticates clients and passes their proof through to PostgreSQL;
// plaintext passwords never appear. NewPlan adds the listener and a
// random admin password (randomness injected); Render writes the plan.
// Reference needs no server: it walks the config structs by their cfg
// tags with the defaults of config.Default, NewPool and NewUser, so a key
// added to the config appears in the reference by itself.
//
// Both are written by hand (write.go) rather than by a YAML or TOML
// encoder, because the comments next to each key are the point; the
// comments come from one catalogue (catalogue.go), in English or
// Russian. Every file written loads with config.Load as written: keys
// refused when changed (config.ErrNotImplemented) stay at their default,
// and keys whose default is another key's value are commented out.
//
// The package keeps no state; everything is safe for concurrent use. It
// does not write auth_query, TLS, or pg_hba rules for the generated file:
// those need decisions only the operator can make.
package generate
