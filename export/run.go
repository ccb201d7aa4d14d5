package export

import (
	"errors"
	"fmt"
	"sync"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
)

// Set is one capture set to export: its files (merged in time order, as
// iwdump -r FILE -r FILE does) and its name.
type Set struct {
	Capture string
	Files   []string
}

// Config is what an export run needs besides the sets.
type Config struct {
	Dir   string
	Ports []uint16 // iwdump --decode-as
	Count int      // stop each set after that many frames (0: all)
	// Workers shards the pipeline of each set (analyze.Config.Workers;
	// 0: by the set's size).
	Workers int
	// Progress, when set, hears of the octets read, from every job
	// (called concurrently).
	Progress func(octets int)
	// Tags, Replace and SkipExisting are Options' (capture identity).
	Tags                  []string
	Replace, SkipExisting bool
}

// Result is the outcome of one set.
type Result struct {
	Set    Set
	Counts Counts
	Report *analyze.Report
	Err    error
	// Skipped: SkipExisting found the same content committed.
	Skipped bool
}

// Export runs the pipeline over one capture set and writes its tables.
// The pipeline runs sharded on a large set (analyze.Run picks the workers
// by its size, Config.Workers overrides), the rows written in capture
// order from the records it hands out; across capture sets the
// parallelism is ExportEach's jobs. A damaged file ends the set with
// an error after what came before it was analyzed; its tables are still
// committed, like iwdump's output up to the damage.
func Export(set Set, cfg Config) Result {
	res := Result{Set: set}
	if len(set.Files) == 0 {
		res.Err = ErrNoCapture
		return res
	}
	o := Options{Dir: cfg.Dir, Capture: set.Capture, Files: set.Files, Tags: cfg.Tags, Replace: cfg.Replace, SkipExisting: cfg.SkipExisting}
	var hf *hashingFile
	if len(set.Files) == 1 {
		var err error
		if hf, err = openHashing(cfg.Dir, set.Capture, set.Files[0]); err != nil {
			res.Err = err
			return res
		}
		if hf != nil {
			defer hf.Close()
		}
	}
	src, total, err := openSet(set.Files, hf)
	if err != nil {
		res.Err = err
		return res
	}
	defer src.Close()
	var e *Exporter
	if hf != nil {
		e, err = newExporter(o, "")
		if errors.Is(err, ErrExists) || errors.Is(err, ErrNameTaken) {
			// A commit of the name appeared since openHashing looked:
			// compare the hash, known first.
			hf = nil
		}
	}
	if hf == nil {
		e, err = New(o)
	}
	if errors.Is(err, ErrExists) {
		res.Skipped = true
		return res
	}
	if err != nil {
		res.Err = err
		return res
	}
	acfg := analyze.Config{Ports: cfg.Ports, Count: cfg.Count, Workers: cfg.Workers, InputSize: total, Progress: cfg.Progress, Unanswered: true}
	rep, derr := analyze.Run(src, acfg, e)
	res.Report = rep
	e.ReadError(derr)
	if hf != nil {
		if e.hash, err = hf.sum(); err != nil {
			e.Abort()
			res.Err = fmt.Errorf("export: %w", err)
			return res
		}
	}
	res.Counts, err = e.Finish(rep)
	switch {
	case err != nil:
		res.Err = err
	case derr != nil:
		res.Err = derr
	}
	return res
}

// openSet opens the files of a set for the analysis: through hf when
// set (one file, hashed as it is read).
func openSet(files []string, hf *hashingFile) (analyze.Source, int64, error) {
	if hf == nil {
		return analyze.OpenFiles(files)
	}
	st, err := hf.f.Stat()
	if err != nil {
		return nil, 0, err
	}
	r, err := pcap.NewReader(hf)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", hf.name, err)
	}
	return r, st.Size(), nil
}

// ExportEach exports each set on its own, jobs at a time (at least 1),
// and returns the results in the order of sets. done, when set, is
// called as each set ends (from the job's goroutine, serialized).
func ExportEach(sets []Set, cfg Config, jobs int, done func(Result)) []Result {
	if err := checkNames(sets); err != nil {
		res := make([]Result, len(sets))
		for i := range res {
			res[i] = Result{Set: sets[i], Err: err}
			if done != nil {
				done(res[i])
			}
		}
		return res
	}
	jobs = max(1, min(jobs, len(sets)))
	if jobs > 1 && cfg.Workers == 0 {
		cfg.Workers = 1 // the jobs share the cores already
	}
	results := make([]Result, len(sets))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = Export(sets[i], cfg)
				if done != nil {
					mu.Lock()
					done(results[i])
					mu.Unlock()
				}
			}
		}()
	}
	for i := range sets {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// checkNames refuses two sets of one name: the second would replace the
// first.
func checkNames(sets []Set) error {
	seen := map[string]string{}
	for _, s := range sets {
		f := ""
		if len(s.Files) > 0 {
			f = s.Files[0]
		}
		if prev, ok := seen[s.Capture]; ok {
			return fmt.Errorf("export: %s and %s have the same capture name %q", prev, f, s.Capture)
		}
		seen[s.Capture] = f
	}
	return nil
}
