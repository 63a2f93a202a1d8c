// Package mcpfs serves one session's files to an agent through the Model
// Context Protocol: a drop-in for the tools of the reference filesystem
// server (@modelcontextprotocol/server-filesystem) built on package
// workspace, so that every path is confined by an os.Root, every write is
// charged to the session's quota ledger before a byte is written, and the
// workspace is snapshotted to the artifact store and hydrated on first
// touch.
//
// One path namespace is routed by longest prefix: /workspace/... is the
// session's scratch workspace (read-write), /reference/... the operator's
// reference tree (read-only: its type has no write methods) and
// /memory/... the user's long-term memory, one artifact per file in the
// user scope of the store (a write is a new version, a read the latest).
// Relative paths are taken relative to /workspace. Client roots are
// ignored: the operator's configuration is the only source of roots.
//
// The session is never chosen by the model: [Server.ForSession] builds an
// MCP server bound to one session scope (stdio: one process per session),
// and [Server.HTTPHandler] serves streamable HTTP for many sessions, taking
// the identity from request headers that a bearer token authorises (see
// [Token]).
package mcpfs
