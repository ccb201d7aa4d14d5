package export

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/iwkit/iwkit/internal/version"
	"github.com/parquet-go/parquet-go"
	"github.com/zeebo/xxh3"
)

// ContentHash is a capture set's identity: "xxh3-128:" and the XXH3
// 128-bit hash of its files' octets concatenated in order (for one file,
// what xxhsum -H2 prints), read as stored (a .gz is hashed compressed).
// XXH3, not SHA-256: it runs at memory speed, where SHA-256 added half
// the export's CPU; the identity guards against mistakes (two captures
// under one name), not against an adversary. A set with a file that is
// not a regular file (a pipe: reading it would consume it) has no hash:
// "".
func ContentHash(files []string) (string, error) {
	for _, name := range files {
		if st, err := os.Stat(name); err == nil && !st.Mode().IsRegular() {
			return "", nil
		}
	}
	h := xxh3.New()
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
	}
	return hashName(h), nil
}

// hashName is the content hash h holds, as ContentHash writes it.
func hashName(h *xxh3.Hasher) string {
	b := h.Sum128().Bytes()
	return "xxh3-128:" + hex.EncodeToString(b[:])
}

// hashingFile is a capture file that hashes what is read of it: the
// export of one regular file takes its content hash from the octets the
// analysis reads anyway, instead of reading the file twice (ContentHash
// before the analysis cost a fifth of a 1 GB export's time, all of it
// before the first frame; BENCHMARKS.md).
type hashingFile struct {
	f    *os.File
	name string
	h    *xxh3.Hasher
}

// openHashing opens file for the analysis, hashing it as it is read. It
// returns nil, nil when the hash must be known before the analysis: the
// file is not a regular file, or a commit of capture exists in dir, which
// New compares the hash with (checkName).
func openHashing(dir, capture, file string) (*hashingFile, error) {
	if st, err := os.Stat(file); err != nil || !st.Mode().IsRegular() || ScanCapture(dir, capture).Live() != "" {
		return nil, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	return &hashingFile{f: f, name: file, h: xxh3.New()}, nil
}

func (r *hashingFile) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.h.Write(p[:n])
	return n, err
}

// sum reads what the analysis left of the file (it stopped early: a
// frame count, damage) and returns the content hash of the whole file.
func (r *hashingFile) sum() (string, error) {
	buf := make([]byte, 1<<20)
	for {
		_, err := r.Read(buf)
		if err == io.EOF {
			return hashName(r.h), nil
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", r.name, err)
		}
	}
}

func (r *hashingFile) Close() error { return r.f.Close() }

// absPaths are the files as absolute paths.
func absPaths(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		if a, err := filepath.Abs(f); err == nil {
			f = a
		}
		out[i] = f
	}
	return out
}

var hostOnce = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
})

// Version is the iwkit module version of this binary and the VCS
// revision it was built from, as the build recorded them and --version
// prints them (internal/version): "VERSION (REVISION)".
var Version = sync.OnceValue(func() string { return version.Read().String() })

// ErrExists is returned by New (and Export) with Options.SkipExisting
// when the capture set's live commit has the same content hash: there is
// nothing to export again.
var ErrExists = errors.New("export: unchanged capture set already exported")

// ErrNameTaken is returned when the capture set's name holds another
// content and the export was not asked to replace it.
var ErrNameTaken = errors.New("capture name taken by other content")

// LiveRecord is the captures row of capture set c's live commit in dir,
// nil when the set has none.
func LiveRecord(dir, c string) (Row, error) {
	s := ScanCapture(dir, c)
	if s.Live() == "" {
		return nil, nil
	}
	p := PartPath(dir, Captures, c, s.Live())
	rows, err := readPart(p, Captures)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("%s: %d rows", p, len(rows))
	}
	return rows[0], nil
}

// checkName compares the live commit of the set with what o exports:
// ErrExists for the same content with SkipExisting, ErrNameTaken for
// other content (or a commit written before content hashes) without
// Replace.
func checkName(o *Options, hash string) error {
	rec, err := LiveRecord(o.Dir, o.Capture)
	if err != nil || rec == nil {
		return err // an unreadable record is replaced: iwsql check lists it
	}
	old, _ := rec["content_hash"].(string)
	if old == hash && hash != "" {
		if o.SkipExisting {
			return ErrExists
		}
		return nil
	}
	if o.Replace {
		return nil
	}
	files, _ := rec["paths"].([]string)
	if len(files) == 0 {
		files, _ = rec["files"].([]string)
	}
	host, _ := rec["host"].(string)
	if old == "" {
		old = "no content hash (exported from a pipe, or before iwkit recorded one)"
	}
	if hash == "" {
		hash = "no content hash: not a regular file"
	}
	return fmt.Errorf("export: capture %q: %w: %s from %s on %q (this: %s); give another --name, or --replace",
		o.Capture, ErrNameTaken, old, strings.Join(files, ", "), host, hash)
}

// schemaPrefix: a part written by this or an earlier iwkit, whose table
// had only the first columns of today's (columns are only appended; a
// column may become NULL-able: commands.latency_ns, when unanswered
// commands joined the table).
func schemaPrefix(got, want parquet.Node) bool {
	g, w := got.Fields(), want.Fields()
	if len(g) > len(w) || len(g) == 0 {
		return false
	}
	for i := range g {
		wi := parquet.Node(w[i])
		if g[i].Required() && wi.Optional() {
			wi = parquet.Required(wi)
		}
		if g[i].Name() != w[i].Name() || !parquet.EqualNodes(g[i], wi) {
			return false
		}
	}
	return true
}
