package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// seriesCombo is a combination with a telemetry series of n samples.
func seriesCombo(size string, n int) *protocol.Combination {
	c := combo(size, 1)
	gpu := 99.0
	c.TelemetrySeries = nil
	for i := range n {
		c.TelemetrySeries = append(c.TelemetrySeries, protocol.TelemetrySample{
			Time: time.Unix(1700000000+int64(i), 0).UTC(), GPUUtil: &gpu,
			Rails: map[string]float64{"VDD_GPU_SOC": 22.162, "VDD_CPU_CV": 6.648, "VIN_SYS_5V0": 15.513},
			Extra: map[string]float64{"cpu0_mhz": 1728, "ram_used_mb": 21985, "temp_tj_c": 38.5 + float64(i)},
		})
	}
	return c
}

// A combination received with its series and requests is stored
// compressed and reads back as it was sent, series and all; the explorer's
// summaries leave the series out.
func TestReceivedRecordsStoredCompressedReadBackAsSent(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	run := labRun(t, s, "j1", "a1")
	sent := seriesCombo("480p", 20)
	if _, err := s.ApplyResults(prepared(t, protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: sent}), time.Now()); err != nil {
		t.Fatal(err)
	}
	key := []byte(sent.ComboKey.String())
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketCombos).Bucket([]byte(run.ID)).Get(key); len(v) == 0 || v[0] != compressedRecord {
			t.Errorf("the record of %s is not compressed: %.40q", key, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Combinations) != 1 {
		t.Fatalf("%d combinations, want 1", len(got.Combinations))
	}
	if c := got.Combinations[0]; !reflect.DeepEqual(c.TelemetrySeries, sent.TelemetrySeries) || !reflect.DeepEqual(c.Requests, sent.Requests) {
		t.Errorf("read back series %+v requests %+v, want %+v and %+v", c.TelemetrySeries, c.Requests, sent.TelemetrySeries, sent.Requests)
	}
	sums, err := s.Summaries().Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := sums[0].Combinations[0]; c.TelemetrySeries != nil || c.Requests != nil || c.TTFT != sent.TTFT {
		t.Errorf("summary combination %+v: want its figures without series or requests", c)
	}
}

// A file of schema 1 (records as plain JSON) opens as schema 2, its
// records read as they are, and takes compressed records beside them; a
// file of a newer schema is refused.
func TestSchema1FileReadAndUpgraded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vlmfleet.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := labRun(t, s, "j1", "a1")
	old := seriesCombo("480p", 5)
	reqs := old.Requests
	// What schema 1 wrote: the combination's JSON without its requests,
	// and the requests' JSON, as they are.
	plain := *old
	plain.Requests = nil
	cj, _ := json.Marshal(&plain)
	rj, _ := json.Marshal(reqs)
	hdr, _ := json.Marshal(runRecord{Run: run, UpdatedAt: time.Now().UTC()})
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketRuns).Put([]byte(run.ID), hdr); err != nil {
			return err
		}
		cb, _ := tx.Bucket(bucketCombos).CreateBucketIfNotExists([]byte(run.ID))
		qb, _ := tx.Bucket(bucketRequests).CreateBucketIfNotExists([]byte(run.ID))
		if err := cb.Put([]byte(old.ComboKey.String()), cj); err != nil {
			return err
		}
		if err := qb.Put([]byte(old.ComboKey.String()), rj); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put([]byte("schema"), []byte("1"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("a schema 1 file: %v", err)
	}
	if got := schemaOf(t, s); got != SchemaVersion {
		t.Errorf("schema %d after opening, want %d", got, SchemaVersion)
	}
	newer := seriesCombo("720p", 5)
	if _, err := s.ApplyResults(prepared(t, protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: newer}), time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := s.Run(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Combinations) != 2 {
		t.Fatalf("%d combinations, want the old one and the new", len(got.Combinations))
	}
	for i, want := range []*protocol.Combination{old, newer} {
		c := got.Combinations[i]
		if c.ComboKey != want.ComboKey || !reflect.DeepEqual(c.TelemetrySeries, want.TelemetrySeries) || !reflect.DeepEqual(c.Requests, want.Requests) {
			t.Errorf("combination %d: %+v, want %+v", i, c, want)
		}
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte("schema"), []byte(strconv.Itoa(SchemaVersion+1)))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); err == nil {
		t.Error("a file of a newer schema opened")
	}
}

func schemaOf(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = strconv.Atoi(string(tx.Bucket(bucketMeta).Get([]byte("schema"))))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A damaged compressed record is an error naming the run and combination,
// not a panic or a made-up combination.
func TestDamagedCompressedRecord(t *testing.T) {
	s := openTest(t)
	run := labRun(t, s, "j1", "a1")
	if _, err := s.ApplyResults(prepared(t, protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: seriesCombo("480p", 20)}), time.Now()); err != nil {
		t.Fatal(err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCombos).Bucket([]byte(run.ID)).Put([]byte("480p-1img-1cam"), []byte{compressedRecord, 0xff, 0xff, 0x01})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), run.ID); err == nil {
		t.Error("a damaged record read without an error")
	}
}
