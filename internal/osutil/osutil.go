// Package osutil holds the few operating-system specifics the project
// needs, so that every other package builds for Linux, macOS and Windows.
package osutil
