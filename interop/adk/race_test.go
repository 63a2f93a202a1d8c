//go:build interop && race

package adk_test

// raceBuild is true when the tests run under the race detector, where each
// start of the race-built agentstore costs several times more: the writer
// race then runs fewer saves (the interop tier of .ci/run, without -race,
// runs all).
const raceBuild = true
