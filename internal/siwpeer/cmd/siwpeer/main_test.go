package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/internal/siwpeer"
)

// TestUpRunDown: up boots the guest and takes commands on its socket;
// run prints a command's output and exits with its code; a background
// server does not hold run; down ends the VM, which is then gone.
func TestUpRunDown(t *testing.T) {
	siwpeer.Require(t) // the image, or a skip (a failure under CI)
	sock := filepath.Join(t.TempDir(), "s.sock")
	var upOut, upErr bytes.Buffer
	done := make(chan int, 1)
	ended := false
	go func() {
		done <- run([]string{"up", "-sock", sock, "-for", "9m", "-boot", "6m", "-f", "17175:7175"}, &upOut, &upErr)
	}()
	defer func() {
		if ended {
			return
		}
		run([]string{"down", "-sock", sock}, &bytes.Buffer{}, &bytes.Buffer{})
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("up did not end after down")
		}
	}()
	// Wait for the socket (the boot: a minute or two under TCG, after
	// any other VM of this machine's tests).
	deadline := time.Now().Add(7 * time.Minute)
	for {
		var o, e bytes.Buffer
		if code := run([]string{"run", "-sock", sock, "true"}, &o, &e); code == 0 {
			break
		}
		select {
		case code := <-done:
			ended = true
			t.Fatalf("up ended (%d): %s %s", code, upOut.String(), upErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guest never took a command: %s", upErr.String())
		}
		time.Sleep(2 * time.Second)
	}
	t.Log(strings.TrimSpace(upOut.String()))
	cases := []struct {
		cmd  string
		code int
		want string
	}{
		{"rdma link show", 0, "siw0"},
		{"echo to-stderr >&2; exit 3", 3, "to-stderr"},
		{"nohup rping -s -P -a 10.0.2.15 -p 7175 > /out/rping.log 2>&1 & echo started", 0, "started"},
		{"sleep 1; ss -ltn | grep -c ':7175 '", 0, "1"},
	}
	for _, c := range cases {
		var o, e bytes.Buffer
		t0 := time.Now()
		code := run([]string{"run", "-sock", sock, c.cmd}, &o, &e)
		t.Logf("%q: exit %d in %v: %q", c.cmd, code, time.Since(t0).Round(time.Millisecond), o.String())
		if code != c.code || !strings.Contains(o.String(), c.want) {
			t.Errorf("%q: exit %d, output %q %q; want %d and %q", c.cmd, code, o.String(), e.String(), c.code, c.want)
		}
	}
	var o, e bytes.Buffer
	if code := run([]string{"down", "-sock", sock}, &o, &e); code != 0 {
		t.Errorf("down: %d %s", code, e.String())
	}
	select {
	case <-done:
		ended = true
	case <-time.After(time.Minute):
		t.Fatal("up did not end after down")
	}
	name := ""
	if _, err := fmt.Sscanf(upOut.String(), "siwpeer: up (%s", &name); err == nil {
		name = strings.TrimSuffix(name, ");")
		if err := siwpeer.Gone(name, 100); err != nil {
			t.Error(err)
		}
	} else {
		t.Errorf("up's first line: %q", upOut.String())
	}
}
