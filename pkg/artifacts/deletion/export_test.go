package deletion

// SetReadBudget sets the read budget of ComputePlan and returns a function
// that restores it.
func SetReadBudget(versions int, bytes int64) func() {
	old := readBudget
	readBudget.versions, readBudget.bytes = versions, bytes
	return func() { readBudget = old }
}
