package workspace

// ChargeTurn books n bytes that the session writes outside its workspace
// (to the user's long-term memory in the artifact store, say) against the
// per-turn allowance, before they are written; the bytes the workspace
// holds are not affected. Over the allowance it fails with an
// *artifacts.Error of code CodeQuotaExceeded whose Remaining is the turn
// allowance left (and whose cause is a *QuotaExceeded naming
// LimitTurnBytes), and books nothing. refund undoes the charge when the
// write then fails.
func (w *Workspace) ChargeTurn(name string, n int64) (refund func(), err error) {
	d := delta{turn: n}
	if qe := w.ledger.take(d); qe != nil {
		return nil, w.refused("workspace charge", name, qe)
	}
	return func() { w.ledger.book(d.neg()) }, nil
}
