package outbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// otherUID is the user that plays another local user: nobody.
const otherUID = 65534

// sharedTemp is a directory like the system's temp dir: everyone may write
// to it, and the sticky bit keeps them from renaming what is not theirs.
func sharedTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}

// asOtherUser hands the paths to another user, as if that user had made
// them; a test that needs it skips where only root may do that.
func asOtherUser(t *testing.T, paths ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user (uid 65534); CI runs as root")
	}
	for _, p := range paths {
		if err := os.Lchown(p, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
	}
}

// plant leaves in dir a spooled hello that the agent would send first, as
// its own: what another user who made the spool directory could write.
func plant(t *testing.T, dir string) {
	t.Helper()
	b, err := encodeRecord(record{subject: "vlmfleet.agent.a1.hello", msgID: "hello-a1-forged",
		data: []byte(`{"schema":1,"agent_id":"a1","hostname":"forged","started_at":"2099-01-01T00:00:00Z"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, recordName(1)), b, 0o666); err != nil {
		t.Fatal(err)
	}
}

// openErr opens the spool at dir and returns Open's error; a spool that
// opens is closed, and the test told how many messages it would send.
func openErr(t *testing.T, dir string) error {
	t.Helper()
	o, err := Open(Options{Dir: dir, Log: zerolog.Nop()})
	if err == nil {
		n, _ := o.Len()
		_ = o.Close()
		return fmt.Errorf("opened, with %d messages to send as the agent's own", n)
	}
	return err
}

func wantRefused(t *testing.T, err error, says ...string) {
	t.Helper()
	for _, s := range says {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Open: %v; want an error saying %q", err, s)
		}
	}
}

// Another user made the default spool's directory under the temp dir
// first, open to all, and planted a hello in it: the agent refuses it,
// naming the directory, its owner and what to do, and sends nothing.
func TestSpoolAnotherUserMadeIsRefused(t *testing.T) {
	tmp := sharedTemp(t)
	top := filepath.Join(tmp, fmt.Sprintf("vlmfleet-spool-%d", os.Geteuid()))
	spool := filepath.Join(top, "a1")
	if err := os.MkdirAll(spool, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{top, spool} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	plant(t, spool)
	asOtherUser(t, top, spool, filepath.Join(spool, recordName(1)))
	wantRefused(t, openErr(t, spool), top+" belongs to uid 65534, not to this agent's uid",
		"another user may have made it", "set spool_dir (or log_dir)")

	// Made by that user inside the agent's own directory: refused too.
	mine := filepath.Join(tmp, "mine")
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(mine, "a1")
	if err := os.Mkdir(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	asOtherUser(t, theirs)
	wantRefused(t, openErr(t, theirs), theirs+" belongs to uid 65534")
}

// A spool directory of the agent's own that others may write to is
// refused with the chmod that fixes it, since they could have planted
// messages in it.
func TestSpoolOthersMayWriteIsRefused(t *testing.T) {
	spool := filepath.Join(sharedTemp(t), "vlmfleet-spool", "a1")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(spool, 0o777); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, openErr(t, spool), spool+" may be written by others (mode 0777)", "run chmod 700 "+spool)
	if err := os.Chmod(spool, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := openErr(t, spool); !strings.HasPrefix(err.Error(), "opened") {
		t.Errorf("a spool others may only read: %v", err)
	}
}

// Under a directory others may write to, the agent follows no link: a
// link planted where its spool goes would send it into a directory the
// link's maker chose.
func TestSpoolLinkUnderSharedDirIsRefused(t *testing.T) {
	tmp := sharedTemp(t)
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.MkdirAll(filepath.Join(target, "a1"), 0o700); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(tmp, "vlmfleet-spool-0")
	if err := os.Symlink(target, top); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, openErr(t, filepath.Join(top, "a1")), top+" is a symbolic link in "+tmp, "does not follow it")
}

// Without the sticky bit, a directory everyone may write to lets anyone
// swap the spool for their own: refused.
func TestSpoolInWorldWritableDirWithoutStickyBitIsRefused(t *testing.T) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(open, "a1")
	wantRefused(t, openErr(t, spool), spool+" lies in "+open+", which everyone may write to without the sticky bit")
}

// Every directory the agent makes for its spool is 0700; a link that only
// the agent's user (or root) could have made, in a directory of its own,
// is the operator's and is followed, and the spool is used where it leads.
func TestSpoolDirectoriesMadePrivateAndOperatorLinksFollowed(t *testing.T) {
	tmp := sharedTemp(t)
	spool := filepath.Join(tmp, "vlmfleet-spool-0", "a1")
	o, err := Open(Options{Dir: spool, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	_ = o.Close()
	for _, d := range []string{filepath.Dir(spool), spool} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want 0700", d, fi.Mode(), err)
		}
	}

	private := t.TempDir()
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(disk, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(private, "spool")
	if err := os.Symlink(disk, link); err != nil {
		t.Fatal(err)
	}
	o, err = Open(Options{Dir: filepath.Join(link, "a1"), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if want := filepath.Join(disk, "a1"); o.Dir() != want {
		t.Errorf("the spool is in %s, want %s", o.Dir(), want)
	}
	if _, err := o.Append(context.Background(), "s", "m1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, _ := os.ReadDir(filepath.Join(disk, "a1")); len(n) < 2 {
		t.Errorf("the spool's files are not where the link leads: %v", n)
	}
}
