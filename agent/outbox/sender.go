package outbox

import (
	"context"
	"time"
)

// Sender is the flusher (Outbox.Run) running in the background on a
// connection's Publish, from StartSending until Stop.
type Sender struct {
	out    *Outbox
	cancel context.CancelFunc
	done   chan struct{}
}

// StartSending starts sending the spool with publish. It goes on past ctx
// until Stop: a stopping agent still sends what its last job left.
func (o *Outbox) StartSending(ctx context.Context, publish Publish) *Sender {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Sender{out: o, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = o.Run(sctx, publish)
	}()
	return s
}

// Stop gives the sender up to drain to send what is spooled, then ends it;
// what it could not send stays in the spool for the next start.
func (s *Sender) Stop(ctx context.Context, drain time.Duration) {
	out := s.out
	dctx, cancelDrain := context.WithTimeout(context.WithoutCancel(ctx), drain)
	if err := out.Wait(dctx, out.Last()); err != nil {
		n, size := out.Len()
		out.log.Warn().Int("messages", n).Int64("bytes", size).Str("spool", out.Dir()).
			Msg("stopping with messages not yet acknowledged; they stay in the spool and the next start sends them first")
	}
	cancelDrain()
	s.cancel()
	<-s.done
}
