package live

// The drains the controller stored, as it last knew them: a heartbeat is
// checked against them without reading the store.

// StoredDrain is the agent's stored drain as the controller last knew it,
// and whether it knows it.
func (l *State) StoredDrain(id string) (drained, known bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	drained, known = l.drains[id]
	return drained, known
}

// LearnStoredDrain keeps the drain read from the store, unless a drain
// changed meanwhile (SetStoredDrain) already told a newer one, and returns
// the one kept.
func (l *State) LearnStoredDrain(id string, drained bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.drains[id]; ok {
		return d
	}
	l.drains[id] = drained
	return drained
}

// SetStoredDrain records a drain just stored.
func (l *State) SetStoredDrain(id string, drained bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drains[id] = drained
}

// SetDrained records what agent id's heartbeats say of its drain.
func (l *State) SetDrained(id string, drained bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.agents[id]; a != nil {
		a.Drained = drained
	}
}
