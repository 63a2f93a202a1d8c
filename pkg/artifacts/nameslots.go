package artifacts

import "context"

// NameSlots returns the number of name slots the scope ever took, of
// Capabilities.NameCapacity: every name it ever held, deleted or not (see
// NameSlotCounter). It is CodeUnsupported on a layout that keeps no such
// count (Capabilities.NoCeilings: it has no name ceiling).
func (s *Store) NameSlots(ctx context.Context, scope Scope) (int, error) {
	const op = "count name slots"
	if err := s.checkScope(op, scope); err != nil {
		return 0, refuse(err, scope, "", NoVersion)
	}
	c, ok := s.drv.(NameSlotCounter)
	if !ok {
		return 0, s.unsupported(op, "count name slots")
	}
	return c.NameSlots(ctx, scope)
}
