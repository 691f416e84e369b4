package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkStartCluster measures one Start and cleanup, the cost every
// integration test pays.
func BenchmarkStartCluster(b *testing.B) {
	for b.Loop() {
		c, err := newCluster(context.Background(), Options{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.destroy(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTemplateCopy and BenchmarkInitdb compare the cached template
// with running initdb for every cluster.
func BenchmarkTemplateCopy(b *testing.B) {
	benchDataDirs(b, func(e *env, data string) error {
		return e.copyTemplate(context.Background(), data)
	})
}

func BenchmarkInitdb(b *testing.B) {
	benchDataDirs(b, func(e *env, data string) error {
		return e.run(context.Background(), "initdb", "-D", data, "--no-sync", "-A", "trust",
			"-E", "UTF8", "--locale=C", "-U", "postgres", "--wal-segsize=1")
	})
}

func benchDataDirs(b *testing.B, makeData func(e *env, data string) error) {
	e, err := getEnv()
	if err != nil {
		b.Fatal(err)
	}
	if err := e.acquireRoot(); err != nil {
		b.Fatal(err)
	}
	defer e.releaseRoot()
	dir, err := os.MkdirTemp(e.root, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := e.chown(dir); err != nil {
		b.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	for b.Loop() {
		if err := makeData(e, data); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := os.RemoveAll(data); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
