package retention

// ConfirmationError says a prune needs a confirmation, or that the one
// given does not match the plan computed again; nothing was changed. Its
// ErrorCode ("confirmation_required", "stale_confirmation") makes the
// command line exit with status 4.
type ConfirmationError struct {
	// Stale is true when a confirmation was given but no longer matches.
	Stale bool
	// Msg explains what happened.
	Msg string
}

// Error returns Msg.
func (e *ConfirmationError) Error() string { return e.Msg }

// ErrorCode returns "stale_confirmation" or "confirmation_required".
func (e *ConfirmationError) ErrorCode() string {
	if e.Stale {
		return "stale_confirmation"
	}
	return "confirmation_required"
}
