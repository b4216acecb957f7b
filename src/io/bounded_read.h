// bounded_read.h — the front ends' one reader of files and standard input, within a limit.
//
// Purpose: every input a front end reads (the CLI's --config, --hf-config, --memory-log FILE and
// `-`, `snapshot FILE`; the native app's dropped files) comes through here, so an endless or
// oversized input (/dev/zero, /dev/urandom, a pipe that never closes, a 10 GB file) costs at most
// its limit plus one byte of reading and memory and ends in an error naming the limit, never a
// hang. Each kind of input has its own limit: the one its decoder in the core accepts
// (config_json.h, hf_config.h, memory_log.h, pickle_reader.h), which checks it again on the text.
// How: read(2) in chunks, never asking for more than limit + 1 bytes in all; one byte more than
// the limit means "over the limit" and nothing further is read. A regular file's size (fstat)
// only reserves memory up front; it never decides the outcome, and nothing is seeked, so regular
// files, pipes, character devices and standard input are read alike.
// Units: bytes. Front-end code (the core does no I/O); no ImGui.
// Limitations: POSIX (open, read, fstat). Opening a FIFO waits for a writer, as any reader would.
// A file that grows while it is read is read as far as the limit allows.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace stagemem_io {

enum class ReadStatus {
  ok,           // `bytes` holds the whole input
  cannot_open,  // open(2) failed (missing file, no permission)
  cannot_read,  // read(2) failed (a directory, an I/O error, a closed descriptor)
  over_limit,   // more than `limit` bytes: limit + 1 were read, then reading stopped
};

struct ReadResult {
  ReadStatus status = ReadStatus::ok;
  std::string bytes;           // the whole input when ok; empty otherwise
  std::size_t limit = 0;       // the limit that applied
  std::size_t bytes_read = 0;  // how many bytes were read (limit + 1 when over_limit)
  std::string reason;          // cannot_open, cannot_read: the system's words (strerror)
};

// The first bytes of an input decide its limit where its kind shows only in its content (the app
// tells an allocator snapshot from text by pickle's first two bytes): `limit_for_head` is called
// once with the first min(head_bytes, input size) bytes (a limit below head_bytes is still
// found exceeded, after those bytes).
inline constexpr std::size_t head_bytes = 16;
using LimitForHead = std::function<std::size_t(std::string_view head)>;

ReadResult read_file(const std::string& path, std::size_t limit);
ReadResult read_file(const std::string& path, const LimitForHead& limit_for_head);
// An open descriptor (0: standard input), read to its end or the limit; it is not closed.
ReadResult read_descriptor(int descriptor, std::size_t limit);

// "1048576 bytes (1 MiB)": the exact count and a binary unit, rounded down (never overstated).
std::string limit_text(std::size_t bytes);
// Why a read failed, naming the input as `input` ("'/dev/zero'", "standard input (-)"):
//   "'/dev/zero' is larger than the limit of 1048576 bytes (1 MiB): reading stopped after 1048577
//    bytes", "cannot open 'x.json'", "cannot read 'dir': Is a directory". Empty when ok.
std::string failure_text(const ReadResult& result, std::string_view input);
// A path as failure_text names it: quoted, cut to 200 characters.
std::string quoted_path(std::string_view path);

}  // namespace stagemem_io
