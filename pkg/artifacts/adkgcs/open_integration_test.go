//go:build integration

package adkgcs_test

import "testing"

// TestLayoutDetectRequestsLarge runs the cases of TestLayoutDetectRequests
// of 1,000 objects or more (more than a page, a page before
// adk-artifacts/, 1,000 foreign objects).
func TestLayoutDetectRequestsLarge(t *testing.T) {
	testLayoutDetectRequests(t, true)
}

// TestOpenRequestsLarge runs the cases of TestOpenRequests of 1,000
// objects or more.
func TestOpenRequestsLarge(t *testing.T) {
	testOpenRequests(t, true)
}
