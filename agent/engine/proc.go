package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// adapter is what differs between engines vlmfleet starts as processes.
type adapter interface {
	servingEngine
	kind() string
	// args are the arguments after the command prefix, and the properties
	// they imply (for Info().Props).
	args(r *resolved, port int, needs Needs, log zerolog.Logger) ([]string, map[string]string)
	// ready makes one readiness check against root ("http://127.0.0.1:P");
	// nil means ready, an error says what is still missing.
	ready(ctx context.Context, p *prober, root string, r *resolved) error
	// describe reads version and properties from the ready engine.
	describe(ctx context.Context, p *prober, root string, r *resolved) (string, map[string]string)
	// versionArgv is the command line that prints the version of the
	// engine that command starts, for when its HTTP API does not say; nil
	// when there is none (a version of something else, such as the Python
	// interpreter a module runs in, would be recorded as the engine's).
	versionArgv(command []string) []string
	// parseVersion reads the output of versionArgv.
	parseVersion(out string) string
}

// envAdapter is an adapter whose engine takes settings from its
// environment (Ollama) as well as from argv.
type envAdapter interface {
	processEnv(r *resolved, port int, needs Needs, logDir string) (map[string]string, error)
}

// afterReadyAdapter is an adapter with work between "the server answers"
// and "the model serves" (Ollama imports and loads the model then).
type afterReadyAdapter interface {
	afterReady(ctx context.Context, s afterReadyEnv) (map[string]string, error)
	// checkLog records and warns about what the engine logged while
	// starting that contradicts the configuration.
	checkLog(tail string, props map[string]string, log zerolog.Logger)
}

// afterReadyEnv is what afterReady may use: the engine's root URL, the
// environment it was started with, and its log.
type afterReadyEnv struct {
	r      *resolved
	root   string
	env    []string
	logf   *os.File
	logDir string
	getenv func(string) string
}

// procEngine runs an adapter's engine as a child process group.
type procEngine struct {
	r      *resolved
	env    Env
	ad     adapter
	exited chan error

	mu      sync.Mutex
	started bool
	stopped bool
	run     *running
	info    protocol.EngineInfo
	logPath string
}

// running is one spawned engine process.
type running struct {
	cmd      *exec.Cmd
	pgid     int
	done     chan struct{} // closed once Wait returns
	state    *os.ProcessState
	waitErr  error
	stopping atomic.Bool
}

func newProcEngine(r *resolved, env Env, ad adapter) *procEngine {
	return &procEngine{
		r: r, env: env, ad: ad,
		exited: make(chan error, 1),
		info: protocol.EngineInfo{
			Kind:  ad.kind(),
			Name:  ad.displayName(),
			Model: r.model,
		},
	}
}

func (e *procEngine) Exited() <-chan error { return e.exited }

func (e *procEngine) Info() protocol.EngineInfo {
	e.mu.Lock()
	info := e.info
	info.Command = append([]string(nil), e.info.Command...)
	info.Props = copyProps(e.info.Props)
	path := e.logPath
	e.mu.Unlock()
	info.LogTail = e.r.scrub(readTail(path, tailLines, tailBytes))
	return info
}

func (e *procEngine) LogTail(n int) string {
	e.mu.Lock()
	path := e.logPath
	e.mu.Unlock()
	return e.r.scrub(readTail(path, n, min(max(tailBytes, n*256), 1<<20)))
}

func (e *procEngine) Start(ctx context.Context, needs Needs) (Endpoint, error) {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return Endpoint{}, fmt.Errorf("%s: Start called twice; make a new engine with New", e.ad.kind())
	}
	e.started = true
	e.mu.Unlock()
	st := &procStart{e: e, needs: needs.normalized(), props: map[string]string{},
		log: e.env.Log.With().Str("engine", e.ad.kind()).Logger()}
	if e.r.DropPageCache {
		if err := dropPageCache(e.env.SysRoot); err != nil {
			return Endpoint{}, fmt.Errorf("%s: drop_page_cache: %w", e.ad.kind(), err)
		}
		st.props["dropped_page_cache"] = "true"
		st.log.Info().Msg("dropped the page cache before starting")
	}
	f, err := openLog(e.env.LogDir, e.ad.kind())
	if err != nil {
		return Endpoint{}, fmt.Errorf("%s: %w", e.ad.kind(), err)
	}
	defer f.Close() // the child holds its own descriptor
	st.logf = f
	e.mu.Lock()
	e.logPath = f.Name()
	e.mu.Unlock()

	if err := st.launch(ctx); err != nil {
		return Endpoint{}, err
	}
	if err := st.afterReady(ctx); err != nil {
		return Endpoint{}, err
	}
	if err := st.describe(ctx); err != nil {
		return Endpoint{}, err
	}
	go e.watch(st.run)
	return Endpoint{BaseURL: st.root + "/v1", Model: e.r.served, APIKey: e.r.APIKey}, nil
}

// procStart is one Start of a process engine as it goes: the process
// launched (on a second port if the first could not be bound), what the
// adapter does once it answers, and what it says of itself. props gathers
// what the run records of the start.
type procStart struct {
	e     *procEngine
	needs Needs
	log   zerolog.Logger
	logf  *os.File
	props map[string]string

	run  *running
	root string
	penv []string
}

// launch starts the process and waits until it answers, once more on
// another port if it could not bind the first.
func (st *procStart) launch(ctx context.Context) error {
	e := st.e
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("%s: %w", e.ad.kind(), err)
		}
		if err := st.spawn(port); err != nil {
			return err
		}
		err = e.waitReady(ctx, st.run, st.root, e.r.timeout)
		if err == nil {
			return nil
		}
		// A startup timeout leaves the first process alive, and even one
		// that exited can leave workers in its group holding GPU memory:
		// end the whole group before a second start.
		e.stopAfterFailure(st.run)
		var ee *Error
		if attempt == 0 && errors.As(err, &ee) && ee.Phase == PhaseStartup && bindFailed(ee.LogTail) {
			st.log.Warn().Int("port", port).Msg("engine could not bind its port; retrying once on another")
			continue
		}
		return err
	}
}

// spawn starts the engine's process to listen on port.
func (st *procStart) spawn(port int) error {
	e, f := st.e, st.logf
	args, argProps := e.ad.args(e.r, port, st.needs, st.log)
	argv := append(append([]string(nil), e.r.command...), args...)
	for k, v := range argProps {
		st.props[k] = v
	}
	e.mu.Lock()
	e.info.Command = redact(argv)
	e.info.Props = copyProps(st.props)
	e.mu.Unlock()
	st.penv = mergeEnv(os.Environ(), e.r.Env)
	if ea, ok := e.ad.(envAdapter); ok {
		extra, err := ea.processEnv(e.r, port, st.needs, filepath.Dir(f.Name()))
		if err != nil {
			return fmt.Errorf("%s: %w", e.ad.kind(), err)
		}
		st.penv = mergeEnv(st.penv, extra)
		fmt.Fprintf(f, "vlmfleet: environment %s\n", strings.Join(envLine(extra), " "))
	}
	fmt.Fprintf(f, "vlmfleet: starting %s\n", strings.Join(redact(argv), " "))
	run, err := e.spawn(argv, f, st.penv)
	if err != nil {
		return fmt.Errorf("%s: start %s: %w", e.ad.kind(), argv[0], err)
	}
	e.mu.Lock()
	e.run = run
	stopped := e.stopped
	e.mu.Unlock()
	st.run = run
	if stopped { // Stop raced with Start
		e.stopAfterFailure(run)
		return fmt.Errorf("%s: stopped while starting", e.ad.kind())
	}
	st.log.Info().Strs("argv", redact(argv)).Int("pid", run.cmd.Process.Pid).Str("log", f.Name()).Msg("engine starting")
	st.root = fmt.Sprintf("http://127.0.0.1:%d", port)
	return nil
}

// afterReady runs what the adapter does once its engine answers (Ollama
// loads the model), if it does anything.
func (st *procStart) afterReady(ctx context.Context) error {
	e, f := st.e, st.logf
	ar, ok := e.ad.(afterReadyAdapter)
	if !ok {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, e.r.timeout)
	more, err := ar.afterReady(actx, afterReadyEnv{r: e.r, root: st.root, env: st.penv, logf: f, logDir: filepath.Dir(f.Name()), getenv: e.env.Getenv})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			e.stopAfterFailure(st.run)
			return fmt.Errorf("%s: start cancelled: %w", e.ad.kind(), ctx.Err())
		}
		ferr := e.failure(st.run, PhaseStartup, "answered but could not serve the model: "+err.Error())
		e.stopAfterFailure(st.run)
		return ferr
	}
	for k, v := range more {
		st.props[k] = v
	}
	ar.checkLog(readTail(f.Name(), 400, 256<<10), st.props, st.log)
	return nil
}

// describe records what the ready engine says of itself: its version and
// the adapter's properties.
func (st *procStart) describe(ctx context.Context) error {
	e := st.e
	version, more := e.ad.describe(ctx, newProber(e.r.APIKey, e.env.probeTimeout), st.root, e.r)
	if version == "" {
		version = e.versionFromCommand(ctx)
	}
	if err := ctx.Err(); err != nil {
		e.stopAfterFailure(st.run)
		return fmt.Errorf("%s: start cancelled: %w", e.ad.kind(), err)
	}
	for k, v := range more {
		st.props[k] = v
	}
	st.props["served_name"] = e.r.served
	e.mu.Lock()
	e.info.Version = version
	e.info.Endpoint = st.root + "/v1"
	e.info.Props = copyProps(st.props)
	e.mu.Unlock()
	st.log.Info().Str("version", version).Str("endpoint", st.root+"/v1").Msg("engine ready")
	return nil
}

// stopAfterFailure ends a process whose start failed, bounded so that a
// stuck group cannot hold Start forever.
func (e *procEngine) stopAfterFailure(run *running) {
	ctx, cancel := context.WithTimeout(context.Background(), e.env.stopGrace+5*time.Second)
	defer cancel()
	if err := run.stop(ctx, e.env.stopGrace); err != nil {
		e.env.Log.Warn().Err(err).Str("engine", e.ad.kind()).Msg("stopping the failed engine")
	}
}

// snapshot copies info under mu: Start completes an engine's record while
// Info may be read from another goroutine.
func snapshot(mu *sync.Mutex, info *protocol.EngineInfo) protocol.EngineInfo {
	mu.Lock()
	defer mu.Unlock()
	out := *info
	out.Command = append([]string(nil), info.Command...)
	out.Props = copyProps(info.Props)
	return out
}

func copyProps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// spawn starts argv with the log file as stdout and stderr.
func (e *procEngine) spawn(argv []string, logf *os.File, env []string) (*running, error) {
	path, err := lookPath(argv[0], e.env.Getenv)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Stdin = nil
	cmd.Env = env
	// A hub id that happens to name a directory in the agent's working
	// directory would be read from there; the log dir holds no models.
	cmd.Dir = filepath.Dir(logf.Name())
	inNewGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	run := &running{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		run.waitErr = cmd.Wait()
		run.state = cmd.ProcessState
		close(run.done)
	}()
	return run, nil
}

// waitReady polls the adapter's readiness check until it passes, the
// process exits, the timeout passes or ctx ends.
func (e *procEngine) waitReady(ctx context.Context, run *running, root string, timeout time.Duration) error {
	p := newProber(e.r.APIKey, e.env.probeTimeout)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(e.env.pollEvery)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-run.done:
			return e.exitedEarly(run)
		default:
		}
		last = e.ad.ready(ctx, p, root, e.r)
		if last == nil {
			// A port another server took could answer for us; only a live child counts.
			select {
			case <-run.done:
				return e.exitedEarly(run)
			default:
				return nil
			}
		}
		select {
		case <-run.done:
			return e.exitedEarly(run)
		case <-ctx.Done():
			e.stopAfterFailure(run)
			return fmt.Errorf("%s: start cancelled: %w", e.ad.kind(), ctx.Err())
		case <-deadline.C:
			return e.failure(run, PhaseStartup, fmt.Sprintf("not ready after %s (startup_timeout; last check: %v)", timeout, last))
		case <-tick.C:
		}
	}
}

// exitedEarly is the error for a process that ended before it was ready.
func (e *procEngine) exitedEarly(run *running) error {
	if run.stopping.Load() {
		return fmt.Errorf("%s: stopped while starting", e.ad.kind())
	}
	return e.failure(run, PhaseStartup, "exited during startup: "+exitStatus(run))
}

// watch reports an exit that nobody asked for.
func (e *procEngine) watch(run *running) {
	<-run.done
	if run.stopping.Load() {
		return
	}
	err := e.failure(run, PhaseRunning, "exited while running: "+exitStatus(run))
	e.env.Log.Error().Err(err).Str("engine", e.ad.kind()).Msg("engine exited")
	e.exited <- err
}

// failure builds the error for a failed engine with its log tail.
func (e *procEngine) failure(run *running, phase, reason string) *Error {
	e.mu.Lock()
	path := e.logPath
	e.mu.Unlock()
	tail := e.r.scrub(readTail(path, tailLines, tailBytes))
	oom := looksOOM(tail)
	if st := run.exitState(); st != nil && !run.stopping.Load() {
		if ws, ok := waitStatus(st); ok && ws.Signaled() && ws.Signal() == sigKill() {
			// Nobody here sent it: on a Jetson that is the kernel's OOM killer.
			oom = true
			reason += " (SIGKILL from outside vlmfleet, usually the kernel's out-of-memory killer)"
		}
	}
	return &Error{Kind: e.ad.kind(), Phase: phase, Reason: reason, OOM: oom, LogFile: path, LogTail: tail}
}

func (e *procEngine) Stop(ctx context.Context) error {
	e.mu.Lock()
	e.stopped = true
	run := e.run
	e.mu.Unlock()
	if run == nil {
		return nil
	}
	if err := run.stop(ctx, e.env.stopGrace); err != nil {
		return fmt.Errorf("%s: stop: %w", e.ad.kind(), err)
	}
	return nil
}

// stop sends SIGTERM to the group, waits up to grace for the whole group to
// end, then sends SIGKILL. Safe to call again and after the process exited
// on its own (its workers may still hold GPU memory).
func (r *running) stop(ctx context.Context, grace time.Duration) error {
	r.stopping.Store(true)
	if r.gone() {
		return nil
	}
	if err := signalGroup(r.pgid, sigTerm()); err != nil {
		return fmt.Errorf("SIGTERM process group %d: %w", r.pgid, err)
	}
	if r.waitGone(ctx, grace) {
		return nil
	}
	if err := signalGroup(r.pgid, sigKill()); err != nil {
		return fmt.Errorf("SIGKILL process group %d: %w", r.pgid, err)
	}
	if r.waitGone(ctx, 5*time.Second) {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("process group %d: %w", r.pgid, ctx.Err())
	}
	return fmt.Errorf("process group %d still has live processes after SIGKILL", r.pgid)
}

// exitState is how the process ended, or nil while it runs.
func (r *running) exitState() *os.ProcessState {
	select {
	case <-r.done:
		return r.state
	default:
		return nil
	}
}

func (r *running) gone() bool {
	select {
	case <-r.done:
		return !groupAlive(r.pgid)
	default:
		return false
	}
}

// waitGone waits until the leader is reaped and the group is empty.
func (r *running) waitGone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if r.gone() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return r.gone()
		case <-tick.C:
		}
	}
}

// versionFromCommand runs the adapter's version command when the
// engine's HTTP API did not say.
func (e *procEngine) versionFromCommand(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	argv := e.ad.versionArgv(e.r.command)
	if len(argv) == 0 {
		return ""
	}
	path, err := lookPath(argv[0], e.env.Getenv)
	if err != nil {
		return ""
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = mergeEnv(os.Environ(), e.r.Env)
	inNewGroup(cmd)
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, sigKill()) }
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.env.Log.Warn().Err(err).Strs("argv", redact(argv)).Msg("engine version unknown")
		return ""
	}
	return e.ad.parseVersion(string(out))
}

// lookPath finds a command name in the PATH that getenv reports (the
// agent's own when getenv is nil); a name with a slash is used as it is.
func lookPath(name string, getenv func(string) string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) || getenv == nil {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("executable %q: %w", name, err)
		}
		return p, nil
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // an empty or relative PATH entry would mean the working directory
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in PATH %q", name, getenv("PATH"))
}

// mergeEnv overrides base with extra, in a stable order.
func mergeEnv(base []string, extra map[string]string) []string {
	if len(extra) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := extra[k]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// envLine writes variables as NAME=value, sorted, for the log.
func envLine(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// redact hides secrets in an argv before it is logged or recorded: the
// values of --api-key and --hf-token, and of a container's -e/--env NAME=value.
func redact(argv []string) []string {
	out := append([]string(nil), argv...)
	for i := 0; i < len(out); i++ {
		name, _, hasEq := strings.Cut(out[i], "=")
		switch name {
		case "--api-key", "--hf-token":
			if hasEq {
				out[i] = name + "=***"
			} else if i+1 < len(out) {
				i++
				out[i] = "***"
			}
		case "-e", "--env":
			if !hasEq && i+1 < len(out) {
				i++
				if k, _, ok := strings.Cut(out[i], "="); ok {
					out[i] = k + "=***"
				}
			}
		}
	}
	return out
}

// scrub masks secrets from the config in engine output before it is
// attached to errors or recorded: engines log their arguments (vLLM prints
// its non-default args, api_key included).
func (r *resolved) scrub(s string) string {
	var secrets []string
	if r.APIKey != "" {
		secrets = append(secrets, r.APIKey)
	}
	for k, v := range r.Env {
		u := strings.ToUpper(k)
		if len(v) >= 6 && (strings.Contains(u, "TOKEN") || strings.Contains(u, "KEY") || strings.Contains(u, "SECRET") || strings.Contains(u, "PASSWORD")) {
			secrets = append(secrets, v)
		}
	}
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "***")
	}
	return s
}

func exitStatus(run *running) string {
	if run.state != nil {
		return run.state.String()
	}
	if run.waitErr != nil {
		return run.waitErr.Error()
	}
	return "unknown status"
}
