// Package atomicfile writes files so that readers, and a crash, see either
// the old content or the new one, never a part of it.
//
// Every function works on an [FS]: [OS] for paths on the command line, or
// [Root] for files that must stay inside one directory (the CA directory,
// through an os.Root, so that no name can escape it).
//
// # Files and permissions
//
// New files are created with O_EXCL and the mode given, which is never
// changed after writing: a key written 0600 is 0600 from its first byte.
// [Replace] writes a temporary file beside the target, fsyncs it, renames it
// over the target and fsyncs the directory; the old file's mode is not
// inherited. Temporary files start with [TempPrefix]; [IsTemp] recognises
// leftovers of a crash so that a repair can remove them.
//
// [CreateGroup] writes several files (a bundle and its password) so that
// all exist or none does, also across a crash: each is staged under a
// fixed temporary name beside its own, then takes its name by a hard link,
// and the next call for the same files settles what a crash left
// ([SettleGroup]).
package atomicfile
