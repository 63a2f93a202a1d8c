package adkfile

// SetMigrateStepHook sets the hook that runs before each rename of a
// migration (nil: none) and returns a function that restores the previous
// one.
func SetMigrateStepHook(h func(step int) error) (restore func()) {
	prev := migrateStepHook
	migrateStepHook = h
	return func() { migrateStepHook = prev }
}
