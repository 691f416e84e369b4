package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// staleBuildAge is when an unfinished template build is taken as abandoned.
const staleBuildAge = 10 * time.Minute

// CleanupStale removes what test processes that died left behind under
// os.TempDir() and /tmp: it kills their postmasters (only processes whose
// command line names the stale data directory), drops their shared memory
// segments and deletes their pgtest-<pid>-* directories. Directories of live
// processes and ones kept with PGTEST_KEEP=1 are left alone. It runs once
// per process before the first cluster starts.
func CleanupStale() {
	bases := []string{os.TempDir()}
	if filepath.Clean(os.TempDir()) != "/tmp" {
		bases = append(bases, "/tmp")
	}
	for _, base := range bases {
		dirs, _ := filepath.Glob(filepath.Join(base, "pgtest-*"))
		for _, dir := range dirs {
			cleanupStaleDir(dir)
		}
	}
}

func cleanupStaleDir(dir string) {
	name := filepath.Base(dir)
	if strings.HasPrefix(name, "pgtest-tplbuild-") {
		if st, err := os.Stat(dir); err == nil && time.Since(st.ModTime()) > staleBuildAge {
			_ = os.RemoveAll(dir)
		}
		return
	}
	parts := strings.SplitN(name, "-", 3)
	if len(parts) < 3 {
		return
	}
	owner, err := strconv.Atoi(parts[1])
	if err != nil || owner == os.Getpid() || alive(owner) {
		return // a template, or a directory in use
	}
	if _, err := os.Stat(filepath.Join(dir, "KEEP")); err == nil {
		return
	}
	pidFiles, _ := filepath.Glob(filepath.Join(dir, "*", "data", "postmaster.pid"))
	for _, pf := range pidFiles {
		killStaleServer(filepath.Dir(pf))
	}
	_ = os.RemoveAll(dir)
}

// killStaleServer kills the postmaster of dataDir if it still runs and
// removes its System V shared memory segment if nothing is attached.
func killStaleServer(dataDir string) {
	if pid, err := postmasterPID(dataDir); err == nil && alive(pid) && isPostmasterOf(pid, dataDir) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = killTree(ctx, pid)
		cancel()
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return
	}
	// Line 7 is "<shmem key> <shmem id>" (see miscadmin.h, LOCK_FILE_LINE_SHMEM_KEY).
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return
	}
	fields := strings.Fields(lines[6])
	if len(fields) != 2 {
		return
	}
	key, err1 := strconv.ParseInt(fields[0], 10, 64)
	id, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return
	}
	removeStaleShm(key, id)
}
