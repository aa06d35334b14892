package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The benchmark's engine runs in a child process (this test binary started
// again) so that getrusage and RSS in the benchmark count the client alone.
const benchServerEnv = "VLMFLEET_LOADGEN_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) == "1" {
		if err := runBenchServer(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Fixed timing of the benchmark engine.
const (
	benchServerTTFT = 5 * time.Millisecond
	benchTokens     = 24
	benchTokenGap   = time.Millisecond
)

// benchServerStats is the engine's own view: ServerTTFT runs from the moment
// the whole request body has been read to just before the first token is
// written. The client's TTFT minus this is what the client adds: writing
// the request, the loopback, and reading and recognising the token.
type benchServerStats struct {
	Requests      int64   `json:"requests"`
	MeanTTFTMicro float64 `json:"mean_server_ttft_us"`
}

// runBenchServer is a raw HTTP/1.1 engine whose own cost is negligible: it
// skips the body without decoding it and writes a canned stream.
func runBenchServer() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes stdin when done
		os.Exit(0)
	}()
	var mu sync.Mutex
	var n, sum int64
	record := func(d time.Duration) {
		mu.Lock()
		n++
		sum += int64(d)
		mu.Unlock()
	}
	stats := func(reset bool) []byte {
		mu.Lock()
		defer mu.Unlock()
		s := benchServerStats{Requests: n}
		if n > 0 {
			s.MeanTTFTMicro = float64(sum) / float64(n) / 1e3
		}
		if reset {
			n, sum = 0, 0
		}
		b, _ := json.Marshal(s)
		return b
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go serveBenchConn(c, record, stats)
	}
}

func serveBenchConn(c net.Conn, record func(time.Duration), stats func(bool) []byte) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	bw := bufio.NewWriterSize(c, 4<<10)
	role := benchChunk([]byte(`{"id":"b","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`))
	var tokens [][]byte
	for i := 0; i < benchTokens; i++ {
		tokens = append(tokens, benchChunk([]byte(tokenChunk(fmt.Sprintf(" word%d", i)))))
	}
	tail := benchChunk([]byte(`{"id":"b","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`))
	tail = append(tail, benchChunk([]byte(usageChunk(1000, benchTokens)))...)
	tail = append(tail, benchChunk([]byte("[DONE]"))...)
	tail = append(tail, "0\r\n\r\n"...)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		path := string(bytes.Fields(line)[1])
		cl := 0
		for {
			h, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimSpace(h)) == 0 {
				break
			}
			if k, v, ok := strings.Cut(string(h), ":"); ok && strings.EqualFold(k, "content-length") {
				cl, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if _, err := br.Discard(cl); err != nil {
			return
		}
		read := time.Now()
		if strings.HasPrefix(path, "/stats") {
			body := stats(strings.Contains(path, "reset"))
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			bw.Flush()
			continue
		}
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		bw.Write(role)
		bw.Flush()
		time.Sleep(time.Until(read.Add(benchServerTTFT)))
		first := time.Now()
		bw.Write(tokens[0])
		if bw.Flush() != nil {
			return
		}
		record(first.Sub(read))
		for _, t := range tokens[1:] {
			time.Sleep(benchTokenGap)
			bw.Write(t)
			if bw.Flush() != nil {
				return
			}
		}
		bw.Write(tail)
		if bw.Flush() != nil {
			return
		}
	}
}

// benchChunk frames one SSE event as one HTTP chunk.
func benchChunk(data []byte) []byte {
	ev := append(append([]byte("data: "), data...), "\n\n"...)
	return append(append([]byte(fmt.Sprintf("%x\r\n", len(ev))), ev...), "\r\n"...)
}

// startBenchServer runs the engine in a child process and returns its address.
func startBenchServer(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("bench server: %v", err)
	}
	return strings.TrimSpace(addr)
}

// serverStats asks the engine for its own TTFT since the last reset.
func serverStats(b *testing.B, addr string, reset bool) benchServerStats {
	b.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	path := "/stats"
	if reset {
		path += "?reset"
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", path)
	br := bufio.NewReader(c)
	cl := 0
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		if strings.TrimSpace(h) == "" {
			break
		}
		if k, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(k, "content-length") {
			cl, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	body := make([]byte, cl)
	if _, err := io.ReadFull(br, body); err != nil {
		b.Fatal(err)
	}
	var s benchServerStats
	if err := json.Unmarshal(body, &s); err != nil {
		b.Fatal(err)
	}
	return s
}
