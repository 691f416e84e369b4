package generate

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Format is the syntax of the written file.
type Format int

const (
	YAML Format = iota
	TOML
)

func (f Format) String() string { return [...]string{"YAML", "TOML"}[f] }

// FormatOf picks the format by the file's extension, as config.Load does.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return YAML, nil
	case ".toml":
		return TOML, nil
	}
	return YAML, fmt.Errorf("output %s: unsupported extension %q (want .yaml, .yml or .toml)", path, filepath.Ext(path))
}

// Comments is the language of the comments written next to each key.
type Comments int

const (
	English Comments = iota
	Russian
	NoComments
)

func (c Comments) String() string { return [...]string{"English", "Russian", "NoComments"}[c] }

func (c Comments) of(e entry) string {
	switch c {
	case English:
		return e.en
	case Russian:
		return e.ru
	}
	return ""
}

// key returns the comment of a catalogue key ("" when absent: a test
// keeps the catalogue complete).
func (c Comments) key(path string) string { return c.of(catalogue[path]) }

// text returns one of the fixed notes.
func (c Comments) text(name string) string { return c.of(texts[name]) }

func write(w io.Writer, f Format, header string, top []*node) error {
	if f == TOML {
		return writeTOML(w, header, top)
	}
	return writeYAML(w, header, top)
}
