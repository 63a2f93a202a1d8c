package retention

import "github.com/agentstore/agentstore/internal/plan"

// ConfirmationError says a prune needs a confirmation, or that the one
// given does not match the plan computed again; nothing was changed. It is
// the one confirmation error of every plan (exit status 4).
type ConfirmationError = plan.ConfirmationError
