package pcap

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/internal/oracle"
)

// commentCapture is a pcapng file of three frames, the first with two
// packet comments, the third with one (one with a comma and a non-ASCII
// letter).
func commentCapture(t testing.TB) ([]byte, [][]string) {
	t.Helper()
	want := [][]string{{"first comment", "second, with a comma"}, nil, {"drittes Kommentar: ä"}}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, FormatPcapNG, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1700000000, 123456789)
	for i, c := range want {
		data := bytes.Repeat([]byte{byte(i)}, 60+i)
		if err := w.WriteFrameComments(ts.Add(time.Duration(i)*time.Millisecond), data, 0, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), want
}

// TestPacketComments: comments written into pcapng Enhanced Packet Blocks
// are read back frame by frame, and tshark reads them as frame.comment.
func TestPacketComments(t *testing.T) {
	data, want := commentCapture(t)
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	var f Frame
	for r.Next(&f) == nil {
		got = append(got, f.Comments)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("comments read back %q, want %q", got, want)
	}

	path := filepath.Join(t.TempDir(), "c.pcapng")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(oracle.Tshark(t), "-r", path, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "frame.comment").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "first comment|second, with a comma" || lines[1] != "" || lines[2] != "drittes Kommentar: ä" {
		t.Fatalf("tshark frame.comment: %q", lines)
	}
}

// TestPacketCommentsClassic: a classic pcap writer writes the frame and
// says it dropped the comments; its reader gives none.
func TestPacketCommentsClassic(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, FormatPcap, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrameComments(time.Unix(1, 0), make([]byte, 60), 0, []string{"x"}); !errors.Is(err, ErrNoComments) {
		t.Fatalf("classic pcap with a comment: %v, want ErrNoComments", err)
	}
	w.Flush()
	r, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	f := Frame{Comments: []string{"stale"}}
	if err := r.Next(&f); err != nil || f.Comments != nil || len(f.Data) != 60 {
		t.Fatalf("frame %v, comments %q", err, f.Comments)
	}
}
