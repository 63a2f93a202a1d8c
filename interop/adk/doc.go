// Package adk holds agentstore's interop tests with Google ADK's own
// artifact services: the Go ADK's Cloud Storage service
// (google.golang.org/adk/v2, driven through the helper command in adkgo/, a
// module of its own so that the ADK stays out of agentstore's go.mod) and
// ADK JS's Cloud Storage and file services (@google/adk, driven through
// adkjs/adk.mjs, pinned by adkjs/package-lock.json). The tests run the real
// agentstore binary against stores those libraries wrote, and the libraries
// against what agentstore wrote, on fake-gcs-server and in temporary
// directories.
//
// The package has no code outside its tests, and its tests build only with
// the tag interop (the interop tier: go test -tags interop ./interop/...).
package adk
