package main

import (
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// Log formats: $VLMFLEET_LOG_FORMAT, else text on a terminal and for the
// commands a person runs and reads (bench, demo, sweep...), JSON for the
// services whose logs a journal collects (controller, agent, sim).
const (
	logText = "text"
	logJSON = "json"
)

// serviceCommands log JSON lines when not on a terminal.
var serviceCommands = map[string]bool{"controller": true, "agent": true, "sim": true}

// logFormat picks the format of command's logs.
func logFormat(command string, tty bool, env string) string {
	switch {
	case env == logText || env == logJSON:
		return env
	case tty || !serviceCommands[command]:
		return logText
	}
	return logJSON
}

// newLogger logs lines for people (coloured on a terminal) or JSON lines.
func newLogger(w io.Writer, tty bool, format, level string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		lvl = zerolog.InfoLevel
	}
	if format == logText {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !tty}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return st.Mode()&os.ModeCharDevice != 0
}
