package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// installHint is appended to every "binary not found" error.
const installHint = "install PostgreSQL 15 (Debian/Ubuntu: apt-get install postgresql-15 postgresql-client-15) " +
	"or set PGTEST_BINDIR to the directory holding initdb and postgres"

// ErrNoBinaries reports that the PostgreSQL server binaries were not found.
var ErrNoBinaries = errors.New("postgresql binaries not found")

// FindBinDir returns the directory of the PostgreSQL server binaries:
// $PGTEST_BINDIR, else /usr/lib/postgresql/15/bin, else the newest
// /usr/lib/postgresql/*/bin, else `pg_config --bindir`.
func FindBinDir() (string, error) {
	var candidates []string
	if dir := os.Getenv("PGTEST_BINDIR"); dir != "" {
		candidates = append(candidates, dir)
	} else {
		candidates = append(candidates, "/usr/lib/postgresql/15/bin")
		candidates = append(candidates, versionDirs("/usr/lib/postgresql")...)
		if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
			candidates = append(candidates, strings.TrimSpace(string(out)))
		}
	}
	for _, dir := range candidates {
		if isExecutable(filepath.Join(dir, "postgres")) && isExecutable(filepath.Join(dir, "initdb")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w (looked in %s): %s", ErrNoBinaries, strings.Join(candidates, ", "), installHint)
}

// FindBinary returns the path of a PostgreSQL program such as pgbench or
// psql: from the server binary directory, else from $PATH.
func FindBinary(name string) (string, error) {
	if dir, err := FindBinDir(); err == nil {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("find %s: %w: %s", name, ErrNoBinaries, installHint)
}

// versionDirs lists <root>/<major>/bin, newest major first.
func versionDirs(root string) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var majors []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			majors = append(majors, n)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(majors)))
	dirs := make([]string, 0, len(majors))
	for _, n := range majors {
		dirs = append(dirs, filepath.Join(root, strconv.Itoa(n), "bin"))
	}
	return dirs
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
