// Package hba parses the minimal pg_hba.conf subset the pooler accepts in
// general.pg_hba and decides which authentication method a connection gets.
//
// Parse turns the text into Rules (one Rule per line, in order, with the
// line number kept for messages); Rules.Match returns the first rule that
// fits a Request (unix socket or TCP, TLS or not, client address, database,
// user), or false, in which case the caller rejects the client as
// PostgreSQL does ("no pg_hba.conf entry"). Method.Decide combines the
// matched method with the user's stored password into the challenge to
// send: trust, MD5, SCRAM or reject.
//
// Supported: types local, host, hostssl, hostnossl; database and user
// fields with "all", names, double-quoted names and comma-separated lists,
// "sameuser" for databases; addresses in CIDR form, address plus netmask,
// or "all"; methods trust, md5, scram-sha-256 and reject. Other methods
// parse but always reject. Options after the method are ignored. Refused
// with an error: +group and @file references, regular expressions,
// samerole/samegroup, samehost/samenet, host names, include directives.
//
// Rules are immutable after Parse and safe for concurrent Match calls.
// The package does no I/O: reading general.pg_hba from a file is the
// config package's job.
//
// Spec: https://www.postgresql.org/docs/current/auth-pg-hba-conf.html and
// the pg_hba section of the pg_doorman documentation.
package hba
