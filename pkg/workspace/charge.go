package workspace

// ChargeTurn books n bytes that the session writes outside its workspace
// (to the user's long-term memory in the artifact store, say) against the
// per-turn allowance, before they are written; the bytes the workspace
// holds are not affected. Over the allowance it fails with an
// *artifacts.Error of code CodeQuotaExceeded whose Remaining is the turn
// allowance left, and books nothing. refund undoes the charge when the
// write then fails.
func (w *Workspace) ChargeTurn(name string, n int64) (refund func(), err error) {
	l := &w.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q.TurnBytes > 0 && l.turnUsed+n > l.q.TurnBytes {
		return nil, quotaError(w.scope, "workspace charge", name, max(l.q.TurnBytes-l.turnUsed, 0))
	}
	l.turnUsed += n
	return func() {
		l.mu.Lock()
		l.turnUsed -= n
		l.mu.Unlock()
	}, nil
}
