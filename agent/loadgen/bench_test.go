package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// benchImages stands in for the picture set with data URLs of the size a
// JPEG of each frame size has in base64 (the server never decodes them).
type benchImages struct{ bytes int }

func (benchImages) Name() string { return "bench" }
func (benchImages) Hash() string { return "none" }
func (benchImages) Len() int     { return 16 }
func (b benchImages) DataURL(size string, i int) (string, error) {
	return "data:image/jpeg;base64," + strings.Repeat(string(rune('A'+i%16)), b.bytes), nil
}
func (b benchImages) UniquePicture(size string, i int, seed uint64) (string, string, error) {
	u, err := b.DataURL(size, i)
	return u[:64], u[64:], err
}

// Base64 JPEG sizes of the method's frames at quality ~85.
const (
	bytes720p = 150 << 10
	bytes2K   = 600 << 10
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clientResult is one client's figures over the measured requests.
type clientResult struct {
	requests   int
	clientTTFT float64 // mean, seconds
	cpu        time.Duration
	server     benchServerStats
}

func (r clientResult) addedMicro() float64 { return r.clientTTFT*1e6 - r.server.MeanTTFTMicro }
func (r clientResult) cpuPerReq() float64 {
	return float64(r.cpu.Microseconds()) / float64(r.requests)
}

func (r clientResult) report(b *testing.B) {
	b.ReportMetric(r.clientTTFT*1e6, "client-ttft-us")
	b.ReportMetric(r.server.MeanTTFTMicro, "server-ttft-us")
	b.ReportMetric(r.addedMicro(), "added-ttft-us")
	b.ReportMetric(r.cpuPerReq(), "cpu-us/req")
	b.ReportMetric(float64(r.cpu.Nanoseconds())/float64(r.requests*benchTokens), "cpu-ns/token")
}

// benchRounds is how many times each client measures a level, alternating,
// so that load from elsewhere on the machine hits both alike.
const benchRounds = 5

// BenchmarkAddedTTFT compares the TTFT this client adds to the engine's own
// with a minimal client's, at 1, 16 and 64 cameras with 720p bodies, against
// the same engine in the same run. Each client measures b.N requests per
// round, the two take turns for benchRounds rounds, and the medians are
// reported with their ratios.
func BenchmarkAddedTTFT(b *testing.B) {
	addr := startBenchServer(b)
	for _, cams := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("cameras=%d", cams), func(b *testing.B) {
			var lg, mi []clientResult
			for round := 0; round < benchRounds; round++ {
				lg = append(lg, runLoadgen(b, addr, cams, bytes720p))
				mi = append(mi, runMinimal(b, addr, cams, bytes720p))
			}
			med := func(rs []clientResult, f func(clientResult) float64) float64 {
				v := make([]float64, len(rs))
				for i, r := range rs {
					v[i] = f(r)
				}
				sort.Float64s(v)
				return v[len(v)/2]
			}
			added := func(r clientResult) float64 { return r.addedMicro() }
			cpu := func(r clientResult) float64 { return r.cpuPerReq() }
			server := func(r clientResult) float64 { return r.server.MeanTTFTMicro }
			la, ma, lc, mc := med(lg, added), med(mi, added), med(lg, cpu), med(mi, cpu)
			b.ReportMetric(med(append(lg, mi...), server), "server-ttft-us")
			b.ReportMetric(la, "loadgen-added-us")
			b.ReportMetric(ma, "minimal-added-us")
			b.ReportMetric(la/ma, "added-ratio")
			b.ReportMetric(lc, "loadgen-cpu-us/req")
			b.ReportMetric(mc, "minimal-cpu-us/req")
			b.ReportMetric(lc/mc, "cpu-ratio")
			b.ReportMetric(lc*1000/benchTokens, "loadgen-cpu-ns/token")
			b.ReportMetric(mc*1000/benchTokens, "minimal-cpu-ns/token")
		})
	}
}

// BenchmarkRSS2K16Cameras reports the client's resident memory during a
// 16-camera 2K combination. Run it on its own: VmHWM is the process's peak.
func BenchmarkRSS2K16Cameras(b *testing.B) {
	addr := startBenchServer(b)
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if kb := testutil.ProcStatusKB("VmRSS"); kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	r := runLoadgen(b, addr, 16, bytes2K)
	close(stop)
	wg.Wait()
	r.report(b)
	b.ReportMetric(float64(peak.Load())/1024, "peak-rss-MB")
	b.ReportMetric(float64(testutil.ProcStatusKB("VmHWM"))/1024, "vmhwm-MB")
}

func runLoadgen(b *testing.B, addr string, cams, imgBytes int) clientResult {
	w := protocol.Workload{
		Prompt: protocol.DefaultPrompt, MaxTokens: 128,
		Sizes: []string{"720p"}, Cameras: []int{cams}, RequestsPerLevel: b.N,
		WarmupRequests: 1, RequestTimeoutSec: 60,
	}
	var cpu0 time.Duration
	h := Hooks{ComboStart: func(_, _ int, _ protocol.PlannedCombo, warmup bool) {
		if !warmup {
			serverStats(b, addr, true)
			runtime.GC() // collect the setup's garbage outside the measured window
			cpu0 = cpuTime()
		}
	}}
	pc := protocol.PlannedCombo{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: cams}, Requests: b.N}
	c, err := MeasureCombo(context.Background(), Target{BaseURL: "http://" + addr + "/v1", Model: "bench"}, w, benchImages{bytes: imgBytes}, pc, h)
	cpu := cpuTime() - cpu0
	if err != nil {
		b.Fatal(err)
	}
	if c.Failed > 0 {
		b.Fatalf("%d requests failed: %v", c.Failed, c.Errors)
	}
	return checked(b, clientResult{requests: b.N, clientTTFT: c.TTFT.Mean, cpu: cpu, server: serverStats(b, addr, false)})
}

// minimalCam is the least a client can do: one connection, one prebuilt
// request written in one call, and a raw byte scan for the first non-empty
// "content".
type minimalCam struct {
	conn net.Conn
	buf  []byte
}

var (
	contentKey = []byte(`"content":"`)
	chunkedEnd = []byte("\r\n0\r\n\r\n")
)

func (m *minimalCam) do(req []byte) (time.Duration, error) {
	t0 := time.Now()
	if _, err := m.conn.Write(req); err != nil {
		return 0, err
	}
	buf := m.buf[:0]
	var ttft time.Duration
	scan := 0
	for {
		if cap(buf)-len(buf) < 4096 {
			nb := make([]byte, len(buf), 2*cap(buf))
			copy(nb, buf)
			buf = nb
		}
		n, err := m.conn.Read(buf[len(buf):cap(buf)])
		at := time.Since(t0)
		buf = buf[:len(buf)+n]
		if ttft == 0 {
			for {
				i := bytes.Index(buf[scan:], contentKey)
				if i < 0 {
					scan = max(0, len(buf)-len(contentKey))
					break
				}
				j := scan + i + len(contentKey)
				if j >= len(buf) {
					break
				}
				if buf[j] != '"' {
					ttft = at
					break
				}
				scan = j
			}
		}
		if bytes.HasSuffix(buf, chunkedEnd) {
			m.buf = buf
			if ttft == 0 {
				return 0, fmt.Errorf("no token")
			}
			return ttft, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

func runMinimal(b *testing.B, addr string, cams, imgBytes int) clientResult {
	w := protocol.Workload{Prompt: protocol.DefaultPrompt, MaxTokens: 128}
	parts, err := buildBodyParts(Target{Model: "bench"}, w)
	if err != nil {
		b.Fatal(err)
	}
	img, _ := benchImages{bytes: imgBytes}.DataURL("720p", 0)
	body := parts.prefix + img + parts.suffix
	req := []byte(fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body))
	mc := make([]*minimalCam, cams)
	for i := range mc {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		mc[i] = &minimalCam{conn: c, buf: make([]byte, 0, 64<<10)}
	}
	run := func(total int, ttfts []time.Duration) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, m := range mc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= total {
						return
					}
					t, err := m.do(req)
					if err != nil {
						b.Error(err)
						return
					}
					if ttfts != nil {
						ttfts[i] = t
					}
				}
			}()
		}
		wg.Wait()
	}
	run(cams, nil) // warm-up, one request per camera
	serverStats(b, addr, true)
	ttfts := make([]time.Duration, b.N)
	runtime.GC() // collect the setup's garbage outside the measured window
	cpu0 := cpuTime()
	run(b.N, ttfts)
	cpu := cpuTime() - cpu0
	var sum time.Duration
	for _, t := range ttfts {
		sum += t
	}
	return checked(b, clientResult{requests: b.N, clientTTFT: sum.Seconds() / float64(b.N), cpu: cpu, server: serverStats(b, addr, false)})
}

// checked makes sure the engine saw exactly the measured requests.
func checked(b *testing.B, r clientResult) clientResult {
	if r.server.Requests != int64(r.requests) {
		b.Fatalf("the engine saw %d measured requests, the client sent %d", r.server.Requests, r.requests)
	}
	return r
}
