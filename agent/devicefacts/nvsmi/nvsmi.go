// Package nvsmi runs nvidia-smi queries and reads its CSV output. Device
// facts and telemetry share it so both probe fields the same way.
package nvsmi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// UnknownFieldError is nvidia-smi refusing a field this driver does not know;
// such a field fails the whole query, which is why callers probe first.
type UnknownFieldError struct{ Field string }

func (e UnknownFieldError) Error() string {
	return fmt.Sprintf("nvidia-smi does not know field %q", e.Field)
}

// unknownFieldRe matches nvidia-smi's message for an invalid field:
// `Field "x" is not a valid field to query.`
func unknownFieldRe() *regexp.Regexp {
	return regexp.MustCompile(`Field "([^"]*)" is not a valid field to query`)
}

// Command runs bin with args and returns stdout; a failure carries the tail
// of what the tool printed, because nvidia-smi explains itself on stdout.
func Command(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stdout.String() + "\n" + stderr.String())
		if m := unknownFieldRe().FindStringSubmatch(msg); m != nil {
			return nil, UnknownFieldError{Field: m[1]}
		}
		return nil, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, tail(msg, 400))
	}
	return stdout.Bytes(), nil
}

// QueryArgs is the argv for a one-shot CSV query of fields.
func QueryArgs(fields []string) []string {
	return []string{"--query-gpu=" + strings.Join(fields, ","), "--format=csv,noheader,nounits"}
}

// Query runs one CSV query and returns one row of values per GPU, in the
// order of fields.
func Query(ctx context.Context, bin string, fields []string) ([][]string, error) {
	out, err := Command(ctx, bin, QueryArgs(fields)...)
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for i, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		row, err := SplitRow(line, len(fields))
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi output line %d: %w", i+1, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Probe returns the fields bin supports, in the order asked, and how many
// GPUs answered. It asks for all at once first (one call on a current
// driver) and only field by field when that fails. alternatives names a
// field to try when the first is unknown (clocks_event_reasons.active was
// clocks_throttle_reasons.active before driver 530).
func Probe(ctx context.Context, bin string, fields []string, alternatives map[string]string) ([]string, int, error) {
	rows, err := Query(ctx, bin, fields)
	if err == nil {
		return fields, len(rows), nil
	}
	var uf UnknownFieldError
	if !errors.As(err, &uf) {
		return nil, 0, err
	}
	var ok []string
	gpus := 0
	for _, f := range fields {
		for _, cand := range []string{f, alternatives[f]} {
			if cand == "" {
				continue
			}
			rows, err := Query(ctx, bin, []string{cand})
			if errors.As(err, &uf) {
				continue
			}
			if err != nil {
				return nil, 0, err
			}
			ok = append(ok, cand)
			gpus = max(gpus, len(rows))
			break
		}
	}
	if len(ok) == 0 {
		return nil, 0, fmt.Errorf("nvidia-smi supports none of the fields %s", strings.Join(fields, ","))
	}
	return ok, gpus, nil
}

// SplitRow splits one CSV line of n values. nvidia-smi separates values
// with ", " and never quotes them.
func SplitRow(line string, n int) ([]string, error) {
	parts := strings.Split(strings.TrimRight(line, "\r\n"), ",")
	if len(parts) != n {
		return nil, fmt.Errorf("%d values where %d fields were asked for: %q", len(parts), n, tail(line, 200))
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts, nil
}

// Unavailable reports whether v is nvidia-smi's way of saying there is no
// value: "[N/A]", "[Not Supported]", "[Unknown Error]" and the like.
func Unavailable(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || v == "N/A" || strings.HasPrefix(v, "[")
}

// Banner reads the driver and CUDA versions from the banner plain
// `nvidia-smi` prints ("Driver Version: 580.65.06     CUDA Version: 13.0").
func Banner(ctx context.Context, bin string) (driver, cuda string, err error) {
	out, err := Command(ctx, bin)
	if err != nil {
		return "", "", err
	}
	driver, cuda = ParseBanner(string(out))
	return driver, cuda, nil
}

// ParseBanner finds the driver and CUDA versions in nvidia-smi's banner;
// either is "" when absent.
func ParseBanner(s string) (driver, cuda string) {
	if m := regexp.MustCompile(`Driver Version:\s*([0-9][0-9.]*)`).FindStringSubmatch(s); m != nil {
		driver = m[1]
	}
	if m := regexp.MustCompile(`CUDA Version:\s*([0-9][0-9.]*)`).FindStringSubmatch(s); m != nil {
		cuda = m[1]
	}
	return driver, cuda
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
