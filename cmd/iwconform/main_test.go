package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/conform"
	"github.com/iwkit/iwkit/endpoint/rping"
)

// The command against an iwkit target: --json rows with a verdict key,
// exit status 0; an unreachable target is a setup failure per case.
func TestJSONAgainstIwkit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conform.Serve(ctx, ln, rping.Options{Timeout: 5 * time.Second}, nil)
	}()
	defer func() { cancel(); ln.Close(); <-done }()
	var out, errb bytes.Buffer
	code := run([]string{"--json", "--crc", "--start-delay", "1ms", ln.Addr().String()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out.String(), errb.String())
	}
	sc := bufio.NewScanner(&out)
	n := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"id", "clause", "sent", "expected", "got", "verdict"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("row without %q: %s", k, sc.Text())
			}
		}
		v := m["verdict"]
		if v != "pass" && !(v == "skip" && m["reason"] != nil) {
			t.Fatalf("row %s", sc.Text())
		}
		n++
	}
	if n != len(conform.Cases()) {
		t.Fatalf("%d rows", n)
	}
	// A dead target: every case fails to connect, exit 1.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	out.Reset()
	if code := run([]string{"--run", "ddp-qn", dead}, &out, &errb); code != 1 || !strings.Contains(out.String(), "fail") {
		t.Fatalf("dead target: exit %d\n%s", code, out.String())
	}
	if code := run([]string{"--bogus"}, &out, &errb); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
}
