package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/doorman-go/doorman/internal/rolecheck"
)

func haproxyConfigCommand(code *int) *cobra.Command {
	var o rolecheck.HAProxyOptions
	var variant, maxLag, wrapper, binary, method, passwordFile string
	var servers []string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "haproxy-config [flags]",
		Short: "print a ready HAProxy configuration (or, with --print-wrapper, an external-check wrapper)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			*code = exitError
			if wrapper != "" {
				if err := printWrapper(wrapper, binary, o.User, o.Database, method, passwordFile, maxLag, timeout); err != nil {
					return err
				}
				*code = exitMatch
				return nil
			}
			o.Variant = rolecheck.Variant(variant)
			for i, s := range servers {
				srv, err := rolecheck.ParseHAProxyServer(s, i)
				if err != nil {
					return err
				}
				o.Servers = append(o.Servers, srv)
			}
			if maxLag != "" {
				n, err := rolecheck.ParseSize(maxLag)
				if err != nil {
					return err
				}
				o.MaxLag = n
			}
			cfg, err := rolecheck.HAProxyConfig(o)
			if err != nil {
				return err
			}
			fmt.Print(cfg)
			*code = exitMatch
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&variant, "variant", "hot_standby", "check variant: hot_standby, recovery (tcp-check), httpchk (pgrole_check serve), external")
	fl.StringArrayVar(&servers, "server", nil, "a node as name=host:port (repeat)")
	fl.StringVar(&o.User, "user", "postgres", "check user (trusted in pg_hba.conf for tcp-check)")
	fl.StringVar(&o.Database, "database", "template1", "check database")
	fl.BoolVar(&o.QuietDisconnect, "quiet-disconnect", true, "put log_disconnections=off in the startup packet")
	fl.StringVar(&o.Name, "name", "pg", "section name prefix")
	fl.StringVar(&o.Bind, "bind", "*", "bind address")
	fl.IntVar(&o.WritePort, "write-port", 5000, "write port (single primary)")
	fl.IntVar(&o.ReadPort, "read-port", 5001, "read port (replicas); -1 for none")
	fl.DurationVar(&o.Inter, "inter", 2*time.Second, "check interval")
	fl.DurationVar(&o.FastInter, "fastinter", 100*time.Millisecond, "check interval while a state change is confirmed")
	fl.DurationVar(&o.DownInter, "downinter", 0, "check interval of down servers (default: --inter)")
	fl.IntVar(&o.Rise, "rise", 2, "passing checks to mark a server up")
	fl.IntVar(&o.Fall, "fall", 3, "failing checks to mark a server down")
	fl.DurationVar(&o.CheckTimeout, "check-timeout", 2*time.Second, "timeout check")
	fl.IntVar(&o.SidecarPort, "sidecar-port", 8010, "httpchk: port of pgrole_check serve on each node")
	fl.StringVar(&maxLag, "max-lag", "", "httpchk: ?lag= on the read port; wrapper: --max-lag")
	fl.StringVar(&o.CommandPrimary, "command-primary", "/usr/local/bin/pgrole_check-primary", "external: wrapper script for the write port")
	fl.StringVar(&o.CommandReplica, "command-replica", "/usr/local/bin/pgrole_check-replica", "external: wrapper script for the read port")
	fl.StringVar(&o.HAProxyVersion, "haproxy-version", "2.6", "target HAProxy version (init-state down needs 3.1+)")
	fl.StringVar(&o.StatsSocket, "stats-socket", "", "add a stats socket at this path")
	fl.StringVar(&wrapper, "print-wrapper", "", "print the external-check wrapper for role primary, replica or any")
	fl.StringVar(&binary, "binary", "", "wrapper: path of pgrole_check (default: this executable)")
	fl.StringVar(&method, "method", "recovery", "wrapper: check method")
	fl.StringVar(&passwordFile, "password-file", "", "wrapper: password file")
	fl.DurationVar(&timeout, "timeout", 1500*time.Millisecond, "wrapper: check timeout; keep it below --inter, after which HAProxy kills an external check")
	return cmd
}

func printWrapper(role, binary, user, database, method, passwordFile, maxLag string, timeout time.Duration) error {
	if _, err := rolecheck.ParseRole(role); err != nil {
		return err
	}
	if binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find executable: %w", err)
		}
		binary = exe
	}
	args := []string{"--role", role, "--method", method, "--user", user, "--database", database, "--timeout", timeout.String()}
	if passwordFile != "" {
		args = append(args, "--password-file", passwordFile)
	}
	if maxLag != "" {
		args = append(args, "--max-lag", maxLag)
	}
	fmt.Print(rolecheck.ExternalWrapper(binary, args))
	return nil
}
