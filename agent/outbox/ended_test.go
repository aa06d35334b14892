package outbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The list of ended jobs outlives a restart, with each job's last message.
func TestEndedJobsOutliveARestart(t *testing.T) {
	dir := t.TempDir()
	o, _ := open(t, dir, 0)
	last := &Message{Subject: "vlmfleet.agent.a1.state", MsgID: "j2-completed-1", Data: []byte(`{"state":"completed"}`)}
	if err := o.EndJob("j1", nil); err != nil {
		t.Fatal(err)
	}
	if err := o.EndJob("j2", last); err != nil {
		t.Fatal(err)
	}
	_ = o.Close()
	o2, _ := open(t, dir, 0)
	if got, ok := o2.EndedJob("j1"); !ok || got != nil {
		t.Errorf("j1 after a restart: %v, %v; want listed without a message", got, ok)
	}
	got, ok := o2.EndedJob("j2")
	if !ok || got == nil || got.Subject != last.Subject || got.MsgID != last.MsgID || !bytes.Equal(got.Data, last.Data) {
		t.Errorf("j2 after a restart: %+v, %v; want %+v", got, ok, last)
	}
	if _, ok := o2.EndedJob("j3"); ok {
		t.Error("j3 never ended, yet it is listed")
	}
}

// A job listed again keeps its message; the list keeps the last
// keepEnded jobs.
func TestEndedJobsKeepTheFirstMessageAndTheLastJobs(t *testing.T) {
	o, _ := open(t, t.TempDir(), 0)
	first := &Message{Subject: "s", MsgID: "m1", Data: []byte("1")}
	if err := o.EndJob("j0", first); err != nil {
		t.Fatal(err)
	}
	if err := o.EndJob("j0", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := o.EndedJob("j0"); got == nil || got.MsgID != "m1" {
		t.Errorf("j0 listed again: message %+v, want the first one kept", got)
	}
	for i := 1; i <= keepEnded; i++ {
		if err := o.EndJob(fmt.Sprintf("j%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := o.EndedJob("j0"); ok {
		t.Errorf("j0 still listed after %d later jobs", keepEnded)
	}
	if _, ok := o.EndedJob(fmt.Sprintf("j%d", keepEnded)); !ok {
		t.Error("the last job ended is not listed")
	}
}

// An id the file could not hold is refused, and nothing is written.
func TestEndJobRefusesAnIdWithALineBreak(t *testing.T) {
	dir := t.TempDir()
	o, _ := open(t, dir, 0)
	if err := o.EndJob("j1\nj2", nil); err == nil || !strings.Contains(err.Error(), "line breaks") {
		t.Errorf("EndJob with a line break: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, endedName)); !os.IsNotExist(err) {
		t.Errorf("the list was written: %v", err)
	}
}

// A list an older agent wrote (ids only) reads as jobs without messages; a
// line whose message is damaged keeps its id.
func TestParseEndedReadsOldListsAndDamagedLines(t *testing.T) {
	rec, _ := encodeRecord(record{subject: "s", msgID: "m", data: []byte("d")})
	good, _ := endedLine(endedJob{id: "j3", last: &Message{Subject: "s", MsgID: "m", Data: []byte("d")}})
	in := "j1\n\nj2\tnot base64!\n" + good + "j4\t" + strings.Repeat("A", 8) + "\n"
	jobs := parseEnded([]byte(in))
	var ids []string
	for _, e := range jobs {
		ids = append(ids, e.id)
	}
	if fmt.Sprint(ids) != "[j1 j2 j3 j4]" {
		t.Fatalf("ids %v, want [j1 j2 j3 j4]", ids)
	}
	if jobs[0].last != nil || jobs[1].last != nil || jobs[3].last != nil {
		t.Errorf("messages of lines without a whole one: %+v %+v %+v", jobs[0].last, jobs[1].last, jobs[3].last)
	}
	if jobs[2].last == nil || string(jobs[2].last.Data) != "d" || len(rec) == 0 {
		t.Errorf("j3's message: %+v", jobs[2].last)
	}
}

// FuzzParseEnded: whatever the file holds, reading it never panics, and
// every job it lists can be written back as it was read.
func FuzzParseEnded(f *testing.F) {
	good, _ := endedLine(endedJob{id: "j3", last: &Message{Subject: "s", MsgID: "m", Data: []byte("d")}})
	f.Add([]byte("j1\nj2\n"))
	f.Add([]byte(good))
	f.Add([]byte("j2\tnot base64\n\n\t\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		jobs := parseEnded(in)
		if len(jobs) > maxEnded {
			t.Fatalf("%d jobs, want at most %d", len(jobs), maxEnded)
		}
		for _, e := range jobs {
			if e.id == "" || strings.ContainsAny(e.id, "\t\n\r") {
				t.Fatalf("id %q", e.id)
			}
			line, err := endedLine(e)
			if err != nil {
				t.Fatalf("writing back %q: %v", e.id, err)
			}
			if back := parseEnded([]byte(line)); len(back) != 1 || back[0].id != e.id {
				t.Fatalf("%q read back as %+v", line, back)
			}
		}
	})
}
