// The project's one atomic file writer: readers of `path` see the old file or the whole new
// one, never a part, and concurrent writers (threads or processes) all succeed, the last
// rename winning. Used by the disk kernel cache and the tuning records.
//
// The steps: create "<path>.tmp.<pid>.<16 hex digits>" in path's directory (O_EXCL, mode
// 0600), write everything, fsync, close, rename over `path`, then fsync the directory so the
// rename survives a crash (a failure of that last fsync is ignored: it only risks losing the
// new file on a crash). On any failure the temp file is removed.
//
// Why not llvm::sys::fs::TempFile (create in the target dir, write, fsync its FD, keep(path))?
// Fsync would be possible (TempFile exposes its FD), but TempFile::create registers the file
// with sys::RemoveFileOnSignal, which installs LLVM's process-wide handlers for SIGINT,
// SIGTERM, SIGSEGV, ... on first use: a side effect a library loaded into someone else's
// process (a Python interpreter with its own handlers) must not have. And the temp name
// carries the writer's pid, so a cleaner (DiskCache::clear) can tell a dead writer's leftover
// from a live writer's file.
#pragma once

#include <string>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace magicube {

// Atomically replaces (or creates) `path` with `bytes`; the directory must exist. `what`
// names the file in errors: "cannot create a temp file for <what> <path>: <reason>" or
// "cannot write <what> <path>: <step> of <temp file> failed: <reason>".
llvm::Error write_file_atomic(const std::string &path, llvm::StringRef bytes, llvm::StringRef what = "file");

// The infix of the temp files write_file_atomic leaves behind only when its process dies
// mid-write: "<path>" + kAtomicTempInfix + "<pid>.<16 hex digits>".
inline constexpr llvm::StringLiteral kAtomicTempInfix = ".tmp.";

// 16 random hex digits (the temp files' suffix), from a per-thread generator.
std::string random_hex16();

}  // namespace magicube
