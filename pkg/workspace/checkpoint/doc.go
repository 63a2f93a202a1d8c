// Package checkpoint stores incremental snapshots ("checkpoints") of a
// workspace tree as ordinary artifacts of a session scope, through the
// portable *artifacts.Store only (Put, Get, GetRange, ListNames,
// ListVersions, Delete), so that it works on every layout.
//
// A snapshot is a manifest (a version of workspace.manifest) listing
// every directory and regular file of the tree with its mode bits, size,
// modification time and content, as a list of blobs. A blob is a whole
// file shorter than 512 KiB or one content-defined chunk of a longer file
// (restic's chunker with a fixed polynomial: 512 KiB to 8 MiB, about
// 1 MiB on average), named by the SHA-256 of its plain content and
// stored, zstd-compressed when that saves an eighth, in a pack (a version
// of workspace.pack, published when it reaches Options.PackBytes or at
// the end of the snapshot). A manifest is published only after every
// pack it names is stored and its record checked. The format is
// documented field by field in docs/layout.md, "Incremental snapshot
// format (format 1)".
//
// Writing is incremental: the latest manifest is the parent; a file
// whose size, modification time and executable bit are its parent
// entry's keeps its blobs without being read; a blob the parent has is
// not stored again; a file that grew from its parent's content keeps
// the parent's blobs and stores only what follows them. An unchanged
// tree writes nothing.
//
// Lifetime ceilings of a layout (Erlang: 3,333 versions per name, 5,000
// names per scope) are the format's problem: a name about to use its last
// version number, or refused with CodeVersionCapacity, rolls over to the
// next generation (workspace.manifest.2, workspace.pack.2, ...), so a
// session runs 100,000 snapshots in about 70 names. Retention keeps the
// newest Options.MaxSnapshots manifests and deletes older ones with the
// packs only they used; compaction copies the live blobs of a pack whose
// live share fell below Options.CompactBelow into the new snapshot's
// pack, so old packs drop out as their manifests age out.
//
// Two writers of one scope are told apart at publication: a manifest
// whose predecessor is not its parent, or that shares its parent with
// another manifest, is withdrawn and the writer gets CodeConflict (at
// most one of two racing writers succeeds; both may be refused).
//
// Reading is Restore (the whole tree or chosen paths into a directory
// the caller makes appear all or nothing), History, Diff, DiffTree and
// Usage. Manifests are read as hostile (Decode): paths are checked as
// zipsafe checks zip entry names, counts against zipsafe.Limits, every
// blob against its pack's bounds and, when read, its SHA-256 before a
// byte of it is written.
package checkpoint
