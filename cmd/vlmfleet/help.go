package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// helpText is what `vlmfleet NAME -h` prints around the flags: every
// command says what it is for, how it is called and shows an example, so a
// newcomer needs no other page to run it.
type helpText struct {
	purpose string // one line
	usage   string // one or more "vlmfleet ..." lines
	details string // optional: a paragraph on what it does
	example string // one or more command lines
}

// judgementHelp lists what a passing level met under each statistic, in
// the words of the summary and the explorer.
func judgementHelp() string {
	var b strings.Builder
	for _, st := range []string{protocol.StatisticMean, protocol.StatisticP90, protocol.StatisticP95} {
		fmt.Fprintf(&b, "  %s: %s\n", st, protocol.Judgement{Statistic: st}.Describe())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// helps is the help of every flag set, by the name given to newFlagSet.
var helps = map[string]helpText{
	"demo": {
		purpose: "run a controller and three simulated agents, sweep them and serve the explorer",
		usage:   "vlmfleet demo [flags]",
		details: "Every result is SIMULATED: the engines are models of the seed's devices, run faster than real time\nand scaled back. It prints the controller's URLs, its NATS URL and the API token file, so that\nother commands (sweep, agents, agent --simulate) can join the demo's lab.",
		example: "vlmfleet demo --exit-when-done\nvlmfleet demo --http 127.0.0.1:8080 --data-dir ./demo-data",
	},
	"controller": {
		purpose: "run the controller: embedded NATS, store, scheduler, API, live page and explorer",
		usage:   "vlmfleet controller [flags]\nvlmfleet controller backup --out FILE   (a copy of a running controller's store; -h for more)",
		example: "vlmfleet controller --data-dir ./vlmfleet-data --nats-listen 0.0.0.0:4222",
	},
	"controller backup": {
		purpose: "copy a running controller's store into a file",
		usage:   "vlmfleet controller backup --out FILE [--controller URL] [--token-file FILE]",
		details: "Copies the running controller's store (GET /api/backup, with the API token) into FILE,\nwhole or not at all. To restore: stop the controller, copy FILE to <data-dir>/vlmfleet.db,\nstart it (docs/operations.md#backup-and-restore).",
		example: "vlmfleet controller backup --out vlmfleet-$(date +%F).db",
	},
	"agent": {
		purpose: "run an agent that measures the engines of this device for a controller",
		usage:   "vlmfleet agent --config agent.yaml [--join STRING] [flags]\nvlmfleet agent --simulate DEVICE --join STRING [--spool-dir DIR] [--labels k=v,...] [flags]\nvlmfleet agent --simulate DEVICE --nats-url URL [flags]",
		details: "--join STRING (or $VLMFLEET_JOIN) enrols the device with the controller the join string names (vlmfleet join-token create):\nthe agent makes its key here, writes its credentials (nats_credentials, default <dir of spool_dir>/ID.nk) and\nID.join.json beside them, which later starts use without the join string. See docs/security.md.",
		example: "vlmfleet agent --config agent.yaml --join 'vlmfleet-join:1:...'\nvlmfleet agent --config agent.yaml --nats-url nats://controller:4222 --nats-credentials orin1.nk\nvlmfleet agent --id sim1 --simulate \"Jetson Orin NX\" --sim-speedup 40 --spool-dir ./sim1 --labels site=rehearsal --join 'vlmfleet-join:1:...'\nvlmfleet agent --simulate \"Jetson AGX Orin\" --sim-speedup 40 --nats-url nats://127.0.0.1:4222 --nats-credentials sim1.nk",
	},
	"agent-creds create": {
		purpose: "issue agent ID's NATS credentials (replacing, and disconnecting, any it had)",
		usage:   "vlmfleet agent-creds create ID [--out FILE] [--force] [--controller URL] [--token-file FILE]",
		details: "Writes the credentials into FILE, readable by you only. See docs/security.md.",
		example: "vlmfleet agent-creds create orin1 --out orin1.nk",
	},
	"agent-creds revoke": {
		purpose: "disconnect agent ID and admit it no more",
		usage:   "vlmfleet agent-creds revoke ID [--controller URL] [--token-file FILE]",
		example: "vlmfleet agent-creds revoke orin1",
	},
	"join-token create": {
		purpose: "make a join token: prints ONE join string (address, secret, CA pin) that devices join with",
		usage:   "vlmfleet join-token create [--ttl 24h] [--uses N] [--labels k=v,...] [--reenrol] [--url https://HOST:PORT] [--controller URL] [--token-file FILE]",
		details: "The join string is shown this once; the controller keeps only a hash of its secret. Each device then runs\n`vlmfleet agent --join STRING` (or deploy/install.sh agent --join STRING). See docs/security.md.",
		example: "vlmfleet join-token create --uses 10 --ttl 2h --labels site=lab1",
	},
	"join-token list": {
		purpose: "list join tokens: id, state, expiry, uses, labels and the agents each enrolled (never secrets)",
		usage:   "vlmfleet join-token list [--json] [--controller URL] [--token-file FILE]",
		example: "vlmfleet join-token list",
	},
	"join-token revoke": {
		purpose: "make join token ID refuse every join from now on",
		usage:   "vlmfleet join-token revoke ID [--controller URL] [--token-file FILE]",
		example: "vlmfleet join-token revoke 3f9a0c12d4e5",
	},
	"agents": {
		purpose: "list a controller's agents: device, state, current job and deployments",
		usage:   "vlmfleet agents [--controller URL] [--token-file FILE] [--json]\nvlmfleet agents forget ID   (-h for more)",
		details: "Broken deployments are listed with the reason the agent gave. Deployment ids are what\n`vlmfleet sweep --deployments` takes. An agent this controller cannot serve shows as needing an\nupgrade, with the release it runs and the one it needs.",
		example: "vlmfleet agents --controller http://127.0.0.1:8080",
	},
	"agents forget": {
		purpose: "remove an offline agent from the controller's fleet; its runs, jobs and sweeps are kept",
		usage:   "vlmfleet agents forget ID [--controller URL] [--token-file FILE]",
		details: "An online agent is refused: stop it first. Its credentials stay; revoke them (agent-creds revoke)\nto keep it out, or it is known again when it next announces itself.",
		example: "vlmfleet agents forget orin-test-3",
	},
	"sweep": {
		purpose: "submit a sweep to a controller: every selected deployment on every selected agent",
		usage:   "vlmfleet sweep [--file sweep.yaml] [flags]\nvlmfleet sweep list | watch ID | cancel ID   (-h on each for more)",
		details: "Flags override the --file sweep's fields. With --wait, it follows the jobs until all have ended and\nprints the answer table for the sweep's runs. --power-modes and --power-limits measure each agent once\nper setting that applies to it (modes on a Jetson, limits on a GPU host). bench's profile flags (--isl,\n--osl, --concurrency, ...) make the sweep a latency and throughput profile (docs/profiles.md).",
		example: "vlmfleet sweep --deployments qwen3-vl-4b-q8 --sizes 720p --cameras 1,2,4 --multi-sizes none --wait\nvlmfleet sweep --file sweeps/orin.yaml --agents orin1,orin2\nvlmfleet sweep --agents orin1 --power-modes 15W,MAXN",
	},
	"sweep list": {
		purpose: "list a controller's sweeps, newest first, with their progress and outcome",
		usage:   "vlmfleet sweep list [--controller URL] [--token-file FILE] [--json]",
		example: "vlmfleet sweep list",
	},
	"sweep watch": {
		purpose: "follow a sweep's jobs until all have ended, then print the answer table",
		usage:   "vlmfleet sweep watch ID [--controller URL] [--token-file FILE]",
		example: "vlmfleet sweep watch s-20261201-0405-1a2b",
	},
	"sweep cancel": {
		purpose: "cancel a sweep (every job not ended) or one job",
		usage:   "vlmfleet sweep cancel ID [--controller URL] [--token-file FILE]",
		example: "vlmfleet sweep cancel s-20261201-0405-1a2b",
	},
	"bench": {
		purpose: "measure an OpenAI-compatible endpoint you already run (no lab needed)",
		usage:   "vlmfleet bench --url http://HOST:PORT/v1 --model NAME [flags]",
		details: `Measures the endpoint with the method of the explorer: closed-loop cameras at every level of
--cameras and size of --sizes with one image per request, then one camera at every size of
--multi-sizes with each count of --images. Each combination starts with a discarded warm-up of
--warmup requests per camera. Prints TTFT and TPS per combination and Max Cameras per size: the
highest measured number of cameras that keeps up ("+" when the highest level measured does, 0
when none does). How a level is judged (--statistic, --target), at the default target:
` + judgementHelp() + `
With --search, each size's ladder is followed by a search for the exact figure: levels doubled
from the highest passing one up to the ceiling, then halved between the highest pass and the
lowest failure above it, so that Max Cameras reads "23" where the ladder said "16+" ("64+" when
the ceiling itself keeps up). Each probe is a full combination, warm-up included, marked (search).

--frame-interval T measures every camera level again with each camera sending one frame every T
seconds, dropping a frame that falls due while its previous answer runs; such a level keeps up
when no frame is dropped, and is printed with its frames due, sent and dropped.

Any of the profile's flags (--isl, --osl, --image-size, --image-format, --profile-images,
--concurrency, --auto-ceiling, --no-stream, --extra-body, --profile-requests) measures a latency
and throughput profile instead, as NVIDIA publishes for its vision NIMs: each --isl/--osl pair at
each --image-size, at each --concurrency level, printed as a Min Latency table (concurrency 1:
TTFT, ITL, request latency) and a Max Throughput table (ITL, requests/s). --concurrency auto: ` + protocol.ProfileAutoRule + `.
The camera ladders' flags are refused beside them (docs/profiles.md).

It first checks that the endpoint answers and serves --model, and names the server (llama.cpp,
vLLM, Ollama, the simulator) from what it says of itself. A llama.cpp server gets
"cache_prompt": false unless --cache-prompt says otherwise. Exits 1 when the check fails or when
every request of a combination failed. Logs go to standard error, the results to standard output.`,
		example: "vlmfleet bench --url http://127.0.0.1:8000/v1 --model Qwen3-VL-4B-Instruct --sizes 720p --cameras 1,2,4 --json run.json\nvlmfleet bench --url http://127.0.0.1:8000/v1 --model Qwen3-VL-4B-Instruct --sizes 720p --multi-sizes none --search --statistic p90\nvlmfleet bench --url http://127.0.0.1:8000/v1 --model Qwen3-VL-4B-Instruct --isl 1000,20000 --osl 1000,2000 --image-size 1120x1120 --concurrency auto",
	},
	"device": {
		purpose: "print the detected device and one telemetry sample",
		usage:   "vlmfleet device [--json] [--source SOURCE] [--simulate DEVICE]",
		example: "vlmfleet device\nvlmfleet device --simulate \"Jetson AGX Orin\" --json",
	},
	"sim": {
		purpose: "serve one simulated engine on its own (OpenAI-compatible), to try a client or bench",
		usage:   "vlmfleet sim --device DEVICE --model MODEL [flags]\nvlmfleet sim --list\nvlmfleet sim swarm --count N   (many simulated agents against a controller; -h for more)",
		example: "vlmfleet sim --device \"Jetson AGX Orin\" --model Qwen3-VL-4B-Instruct --speedup 20",
	},
	"sim swarm": {
		purpose: "run N simulated agents in this process against a controller, to size it",
		usage:   "vlmfleet sim swarm --count N [--controller URL] [--token-file FILE] [flags]",
		details: "Each agent is the real agent code with its own id (PREFIX-0001...), NATS connection and\ncredentials, enrolled through the controller's API (agent-creds create) before the first starts.\nEvery result is SIMULATED. Stop with Ctrl-C; the agents hand running jobs back. See docs/scaling.md.",
		example: "vlmfleet sim swarm --count 1000 --controller http://127.0.0.1:8080 --token-file vlmfleet-data/api-token",
	},
	"explorer table": {
		purpose: "print the explorer's table at one view, for scripts",
		usage:   "vlmfleet explorer table [--controller URL | --file run.json... | run.json...] [flags]",
		details: "Only rows measured at the size and cameras are shown; --images reads the figures with that many\nimages per camera (the method measures 1, 3 and 5). Where the runs have power samples, the page's power\ncolumns follow, the cost at --price, --months, --kwh and --currency (example inputs by default);\n--json then carries those inputs as cost and each row's cost_per_camera_month.",
		example: "vlmfleet explorer table --size 1080p --cameras 4 --sort tps\nvlmfleet explorer table --device \"AGX Orin\" --model qwen3 --json",
	},
	"explorer export": {
		purpose: "write the explorer as one self-contained HTML file, data inside; it works offline",
		usage:   "vlmfleet explorer export --out explorer.html [--controller URL | --file run.json... | run.json...]",
		example: "vlmfleet explorer export --out explorer.html",
	},
	"explorer profiles": {
		purpose: "print the latency and throughput tables (model, GPU, precision, TP; Min Latency and Max Throughput)",
		usage:   "vlmfleet explorer profiles [--controller URL | --published] [--model TEXT] [--gpu TEXT] [--precision P] [--tp N] [--profile min_latency|max_throughput] [--json]",
		details: "The lines NVIDIA publishes for its vision NIMs (genai-perf) are built in; a controller also has the\nlines it measured, each under the published line of the same model, GPU, precision, TP, ISL, OSL and\nimage, with the difference in %. --published prints the built-in lines without a controller.\nWhat each figure means: docs/profiles.md.",
		example: "vlmfleet explorer profiles --published --model 90b --gpu a100\nvlmfleet explorer profiles --profile max_throughput --json",
	},
	"results import": {
		purpose: "load result documents (bench --json, or a JSON array of them) into a controller",
		usage:   "vlmfleet results import FILE... [--controller URL] [--token-file FILE] [--origin LABEL]",
		details: "Every file is checked first; one bad file imports nothing.",
		example: "vlmfleet results import run.json lab2/*.json --origin lab2",
	},
	"results export": {
		purpose: "write a controller's runs as CSV (one line per combination) or JSON (result documents)",
		usage:   "vlmfleet results export --format csv|json [--out FILE] [--sweep ID] [--agent ID] [--controller URL]",
		details: "JSON is a JSON array of result documents that `vlmfleet results import` reads back.",
		example: "vlmfleet results export --format csv --sweep s-20261201-0405-1a2b --out sweep.csv",
	},
	"results diff": {
		purpose: "set run B against the earlier run A of the same configuration, with a verdict per figure",
		usage:   "vlmfleet results diff A B [--controller URL] [--token-file FILE] [--json] [--fail-on-worse]",
		details: "Each combination's TTFT p50 and p90, E2E p50, TPS p50 and success rate, with a verdict that weighs\nthe spread of the requests (docs/compare.md). Runs of different configurations (model, quantization,\nengine, device) are refused, naming the parts that differ. Exit status: 0 when the comparison is\nshown; with --fail-on-worse, 1 when B is worse than A (as on any error); 2 on a usage error.",
		example: "vlmfleet results diff sw-20261102-101500-3f9a2c1e-j1-a1 sw-20261130-091200-b7d40e55-j1-a1 --fail-on-worse",
	},
	"version": {
		purpose: "print the version, the commit and the build date",
		usage:   "vlmfleet version   (or vlmfleet --version)",
		example: "vlmfleet version",
	},
}

// writeHelp prints h with the flags of fs between the usage and the example.
func writeHelp(w io.Writer, h helpText, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s\n\nUsage:\n", h.purpose)
	for _, l := range strings.Split(h.usage, "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if h.details != "" {
		fmt.Fprintf(w, "\n%s\n", h.details)
	}
	hasFlags := false
	if fs != nil {
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	}
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		fs.PrintDefaults()
	}
	fmt.Fprintln(w, "\nExample:")
	for _, l := range strings.Split(h.example, "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// groupHelp is the help of a command made of subcommands (explorer,
// results, agent-creds): each subcommand's purpose and usage.
func groupHelp(purpose string, subs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n", purpose)
	for _, s := range subs {
		h := helps[s]
		fmt.Fprintf(&b, "  %s\n      %s\n", strings.SplitN(h.usage, "\n", 2)[0], h.purpose)
	}
	fmt.Fprintf(&b, "\nRun 'vlmfleet %s -h' for its flags and an example.", strings.Fields(subs[0])[0]+" SUBCOMMAND")
	return b.String()
}
