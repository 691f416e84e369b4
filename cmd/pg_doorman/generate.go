package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/doorman-go/doorman/internal/generate"
)

// introspectTimeout bounds connecting to PostgreSQL and reading the
// catalogue.
const introspectTimeout = 30 * time.Second

type generateFlags struct {
	host, user, password, database string
	port                           int
	output                         string
	reference, noComments, ru      bool
}

// addCommands adds the subcommands to the root command. Shell completion
// is left out: the seed's --help lists only generate and help.
func addCommands(root *cobra.Command) {
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newGenerateCmd())
}

func newGenerateCmd() *cobra.Command {
	var f generateFlags
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Generate configuration for pg_doorman by connecting to PostgreSQL and auto-detecting databases and users",
		Long: `Generate configuration for pg_doorman by connecting to PostgreSQL and auto-detecting databases and users.

Every database that accepts connections becomes a pool pointing at the server,
every login role with a password a user whose verifier is copied from pg_authid
(or pg_shadow): that needs a superuser. Connection options default to the libpq
environment (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, ~/.pgpass).
The format follows the --output extension (.yaml, .yml, .toml); without
--output, YAML goes to stdout. --reference writes every setting with its
default and connects to nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGenerate(cmd.Context(), f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.host, "host", "", "PostgreSQL host, address or unix socket directory [env: PGHOST]")
	fl.IntVar(&f.port, "port", 0, "PostgreSQL port [env: PGPORT] (default 5432)")
	fl.StringVar(&f.user, "user", "", "PostgreSQL superuser to read pg_authid as [env: PGUSER]")
	fl.StringVar(&f.password, "password", "", "password of --user [env: PGPASSWORD]")
	fl.StringVar(&f.database, "database", "", "database to connect to [env: PGDATABASE] (default postgres)")
	fl.StringVarP(&f.output, "output", "o", "", "file to write, format by extension .yaml/.yml/.toml (default: YAML to stdout)")
	fl.BoolVar(&f.reference, "reference", false, "write every setting with its default and an example pool, without connecting to PostgreSQL")
	fl.BoolVar(&f.noComments, "no-comments", false, "write no comments")
	fl.BoolVar(&f.ru, "ru", false, "write the comments in Russian")
	return cmd
}

func runGenerate(ctx context.Context, f generateFlags, stdout, stderr io.Writer) error {
	format := generate.YAML
	if f.output != "" {
		var err error
		if format, err = generate.FormatOf(f.output); err != nil {
			return err
		}
	}
	comments := generate.English
	switch {
	case f.noComments:
		comments = generate.NoComments
	case f.ru:
		comments = generate.Russian
	}
	var b bytes.Buffer
	if f.reference {
		if err := generate.Reference(&b, format, comments); err != nil {
			return fmt.Errorf("write reference: %w", err)
		}
	} else {
		ctx, cancel := context.WithTimeout(ctx, introspectTimeout)
		defer cancel()
		inv, err := generate.Introspect(ctx, generate.Options{Host: f.host, Port: f.port, User: f.user, Password: f.password, Database: f.database})
		if err != nil {
			return err
		}
		plan, err := generate.NewPlan(inv, rand.Reader)
		if err != nil {
			return err
		}
		if err := generate.Render(&b, plan, format, comments); err != nil {
			return fmt.Errorf("write config: %w", err)
		}
		fmt.Fprintf(stderr, "pg_doorman: %d databases, %d login roles found at %s:%d\n", len(inv.Databases), len(inv.Roles), inv.ServerHost, inv.ServerPort)
	}
	if f.output == "" {
		_, err := stdout.Write(b.Bytes())
		return err
	}
	// 0600: the file holds password verifiers and the admin password.
	if err := os.WriteFile(f.output, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	fmt.Fprintf(stderr, "pg_doorman: wrote %s\n", f.output)
	return nil
}
