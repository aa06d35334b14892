package outbox

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
)

// endedName is the file in the spool that lists the jobs the agent ended
// last, one a line: the job's id and, after a tab, the job's last message
// as a spool record in base64. It outlives a restart so that a job which
// ended while the link was down, and which JetStream delivers again once
// it is back (its ack never arrived), is acknowledged rather than measured
// twice by an agent restarted meanwhile. A job is listed before its last
// message is spooled, so a kill in between leaves the message here, to be
// spooled when the job comes back.
const endedName = "ended-jobs"

// keepEnded is how many ended jobs the list keeps: a job comes back only
// while its acknowledgement is missing, which covers the last few.
const keepEnded = 64

// maxEnded bounds the list as read, whatever the file holds.
const maxEnded = 1024

// maxEndedLine bounds one line as read: a last message is a job's state.
const maxEndedLine = 1 << 20

// Message is one message as the spool sends it.
type Message struct {
	Subject, MsgID string
	Data           []byte
}

// endedJob is one line of the list: last is nil where the job ended
// without a message (or was listed by an agent that kept ids only).
type endedJob struct {
	id   string
	last *Message
}

// EndJob lists the job as ended here, with its last message (nil: none),
// synced to disk before it returns: call it before spooling that message.
// A job listed already keeps its place and its message.
func (o *Outbox) EndJob(id string, last *Message) error {
	if id == "" || strings.ContainsAny(id, "\t\n\r") {
		return fmt.Errorf("job id %q: want a non-empty id without tabs or line breaks", id)
	}
	o.endedMu.Lock()
	defer o.endedMu.Unlock()
	if o.endedIndex(id) >= 0 {
		return nil
	}
	jobs := append(slices.Clone(o.ended), endedJob{id: id, last: last})
	if len(jobs) > keepEnded {
		jobs = jobs[len(jobs)-keepEnded:]
	}
	if err := o.saveEnded(jobs); err != nil {
		return fmt.Errorf("list job %s as ended: %w", id, err)
	}
	o.ended = jobs
	return nil
}

// EndedJob says whether the job ended here and returns its last message,
// if the list has it.
func (o *Outbox) EndedJob(id string) (last *Message, ok bool) {
	o.endedMu.Lock()
	defer o.endedMu.Unlock()
	i := o.endedIndex(id)
	if i < 0 {
		return nil, false
	}
	return o.ended[i].last, true
}

// endedIndex is where the list holds the job, or -1; endedMu is held.
func (o *Outbox) endedIndex(id string) int {
	return slices.IndexFunc(o.ended, func(e endedJob) bool { return e.id == id })
}

// saveEnded replaces the file with jobs, synced.
func (o *Outbox) saveEnded(jobs []endedJob) error {
	_, err := atomicfile.Write(filepath.Join(o.dir, endedName), 0o600, func(w io.Writer) error {
		for _, e := range jobs {
			line, err := endedLine(e)
			if err != nil {
				return err
			}
			if _, err := io.WriteString(w, line); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = syncDir(o.dir)
	}
	return err
}

func endedLine(e endedJob) (string, error) {
	if e.last == nil {
		return e.id + "\n", nil
	}
	b, err := encodeRecord(record{subject: e.last.Subject, msgID: e.last.MsgID, data: e.last.Data})
	if err != nil {
		return "", fmt.Errorf("job %s's last message: %w", e.id, err)
	}
	return e.id + "\t" + base64.StdEncoding.EncodeToString(b) + "\n", nil
}

// loadEnded reads the list; a missing file is an empty list.
func loadEnded(path string) ([]endedJob, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseEnded(b), nil
}

// parseEnded keeps the non-empty lines, the last maxEnded of them. A line
// whose message does not decode keeps its id: the job is still not to be
// measured again, though its last message is lost (the spool had it too,
// unless the agent was killed in the instant between the two writes).
func parseEnded(b []byte) []endedJob {
	var jobs []endedJob
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxEndedLine)
	for sc.Scan() {
		id, enc, _ := strings.Cut(sc.Text(), "\t")
		id = strings.TrimSpace(id)
		if id == "" || strings.ContainsRune(id, '\r') {
			continue // no job has such an id: not a line EndJob wrote
		}
		jobs = append(jobs, endedJob{id: id, last: decodeLast(enc)})
	}
	if len(jobs) > maxEnded {
		jobs = jobs[len(jobs)-maxEnded:]
	}
	return jobs
}

func decodeLast(enc string) *Message {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil || len(raw) == 0 {
		return nil
	}
	r, err := decodeRecord(raw)
	if err != nil {
		return nil
	}
	return &Message{Subject: r.subject, MsgID: r.msgID, Data: r.data}
}
