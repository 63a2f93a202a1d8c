// Package workspace manages per-session scratch workspaces: private
// directories where an agent reads and writes files during a session, kept
// in sync with the artifact store as zip snapshots so that another replica
// (pod) can pick the session up where the last one left it.
//
// A [Manager] owns a scratch root, an optional read-only reference root and
// an [*artifacts.Store]. A session's directory under the scratch root is
// named by [DirName]: the first 32 hex characters of SHA-256 over a tag,
// the app, the user and the session, created 0700; ids never reach a path,
// and the app is bound to the directory (an index naming another app is
// refused). A directory named by an earlier version from the user and
// session alone ([LegacyDirName]) is migrated only when the store confirms
// its app ([Manager.Migrate]). Inside it
// the manager keeps an index record ([IndexName], see [Index]) naming the
// session and its last access; only the manager writes it, atomically.
//
// The agent touches its files only through the confined API of
// [Workspace]: Open, ReadLines, Stat, List, Write, WriteFrom, Append,
// Remove, Rename and Mkdir. Every call works through an [os.Root] opened on
// the session's directory, so neither ".." nor a symbolic link planted in
// the tree leads outside; the manager's names at the top ([IsReserved]:
// the index and temporary files) are refused and hidden there, and the
// index's names refused at every depth, while every other name, also one
// beginning with [ReservedPrefix], is the agent's and listed; a final
// symbolic link is never followed, and a file that is (a hard link to)
// the index is refused. A
// path a snapshot could not hold (zipsafe.CheckName) is refused with
// CodeInvalidName by every call that creates one. Reference files are
// reachable through [Reference], which has read methods only and refuses
// to read a file with more than one hard link.
//
// Every change is charged to a per-session quota ledger ([Quota]) before
// it is made: a per-turn allowance (reset by [Workspace.BeginTurn]), and
// caps on the bytes, the regular files and the entries (files and
// directories) the workspace holds at any depth; a directory costs
// [DirBytes]. The ledger is measured by a walk of the whole tree when the
// workspace is set up and at BeginTurn, and changes with the tree
// atomically: every change holds the workspace's change lock from looking
// at what it replaces to booking what it did. A refused change fails with
// an *[artifacts.Error] of code [artifacts.CodeQuotaExceeded] whose
// Remaining is the byte allowance left and whose cause is a
// *[QuotaExceeded] naming the limit that bound, and leaves nothing
// behind.
//
// [Workspace.Snapshot] zips the tree (without the index) with package
// zipsafe, streaming it through a pipe into Store.Put as the artifact
// [SnapshotName] of the session scope; it lists every entry it leaves out
// (symbolic links and special files, [Omission]) and writes nothing for a
// tree the latest version already holds. [Workspace.Hydrate] fetches a
// version, lets the store's Reader verify its digest while it is copied to
// a temporary file in the scratch root, and extracts it all or nothing,
// keeping the index; it refuses to overwrite work no snapshot holds
// ([OverwriteError]) unless forced. [Manager.HydrateTo] restores a version
// into a new directory instead. The first [Manager.Open] of a session on a manager
// whose scratch root has no directory for it hydrates the latest snapshot.
//
// [Manager.ListWorkspaces] reports every entry of the scratch root with the
// state of its index, for listing, sweeping and quota reports.
package workspace
