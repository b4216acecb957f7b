#include "bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace stagemem_io {
namespace {

// The first piece of an input of unknown size (a pipe, a device); later pieces are larger, so an
// endless input takes a few hundred read(2) calls and pieces, and a short one little memory.
constexpr std::size_t first_piece_bytes = std::size_t{1} << 20;
constexpr std::size_t piece_bytes = std::size_t{8} << 20;

// limit + 1 without wrapping: the count that proves an input is over `limit`.
std::size_t one_past(std::size_t limit) {
  return limit == std::numeric_limits<std::size_t>::max() ? limit : limit + 1;
}

// Closes the descriptor read_file opened, on every path out.
struct OwnedDescriptor {
  int value = -1;
  ~OwnedDescriptor() {
    if (value >= 0) ::close(value);
  }
};

// Reads into pieces that never move once filled (no reallocation copies while reading), so an
// endless input costs limit + 1 bytes of memory, each written by read(2) once. The first piece is
// the result's string, sized up front to what is expected (a regular file's size; its zero fill
// costs far less than the page faults of reading into it); only an input that outgrew it is
// joined into one string at the end.
class Reader {
 public:
  Reader(int descriptor, ReadResult& result) : descriptor_(descriptor), result_(result) {}

  std::size_t size() const { return first_used_ + rest_size_; }

  // Reads until `until` bytes are held or the input ends; `expected` is the size the input is
  // expected to have (0: unknown). False on a read error (recorded in the result).
  bool read_until(std::size_t until, std::size_t expected) {
    std::string& first = result_.bytes;
    if (rest_.empty() && size() < until) {
      // While it is the only piece, the first one grows to the expected size (a copy of what it
      // holds: nothing, or the few head bytes).
      const std::size_t wanted = expected > 0 ? expected : first_piece_bytes;
      first.resize(std::max(first.size(), std::min(until, std::max(wanted, first_used_ + 1))));
    }
    while (size() < until) {
      char* at = nullptr;
      std::size_t room = 0;
      if (rest_.empty() && first_used_ < first.size()) {
        at = first.data() + first_used_;
        room = first.size() - first_used_;
      } else {
        if (rest_.empty() || rest_.back().used == rest_.back().capacity) {
          const std::size_t capacity = std::min(piece_bytes, until - size());
          // Not zero-filled (read(2) writes it); Emscripten's libc++ has no
          // make_unique_for_overwrite.
          rest_.push_back({std::unique_ptr<char[]>(new char[capacity]), capacity, 0});
        }
        Piece& piece = rest_.back();
        at = piece.data.get() + piece.used;
        room = piece.capacity - piece.used;
      }
      const ssize_t got = ::read(descriptor_, at, std::min(room, until - size()));
      if (got < 0) {
        if (errno == EINTR) continue;
        result_.status = ReadStatus::cannot_read;
        result_.reason = std::strerror(errno);
        return false;
      }
      if (got == 0) return true;  // the end of the input
      if (rest_.empty()) {
        first_used_ += static_cast<std::size_t>(got);
      } else {
        rest_.back().used += static_cast<std::size_t>(got);
        rest_size_ += static_cast<std::size_t>(got);
      }
    }
    return true;
  }

  // The bytes read so far as result.bytes.
  void join() {
    std::string& bytes = result_.bytes;
    bytes.resize(first_used_);
    if (rest_.empty()) return;
    bytes.reserve(size());
    for (const Piece& piece : rest_) bytes.append(piece.data.get(), piece.used);
    rest_.clear();
  }

 private:
  struct Piece {
    std::unique_ptr<char[]> data;
    std::size_t capacity = 0;
    std::size_t used = 0;
  };
  int descriptor_;
  ReadResult& result_;
  std::size_t first_used_ = 0;  // bytes of result.bytes read; the rest of it is room
  std::vector<Piece> rest_;
  std::size_t rest_size_ = 0;
};

ReadResult read_bounded(int descriptor, std::size_t limit, const LimitForHead* limit_for_head) {
  ReadResult result;
  result.limit = limit;
  Reader reader(descriptor, result);
  if (limit_for_head != nullptr) {
    if (!reader.read_until(head_bytes, head_bytes)) {
      std::string().swap(result.bytes);
      return result;
    }
    reader.join();
    result.limit = limit = (*limit_for_head)(result.bytes);
  }
  // A regular file says how large it is: the first piece is made that large, plus the one byte
  // that finds the end (a hint only: what is read decides). Nothing is seeked.
  std::size_t expected = 0;
  struct stat info {};
  if (::fstat(descriptor, &info) == 0 && S_ISREG(info.st_mode) && info.st_size >= 0) {
    expected = one_past(static_cast<std::size_t>(info.st_size));
  }
  const bool read = reader.size() > limit || reader.read_until(one_past(limit), expected);
  result.bytes_read = reader.size();
  if (read && reader.size() > limit) result.status = ReadStatus::over_limit;
  if (result.status == ReadStatus::ok) {
    reader.join();
  } else {
    std::string().swap(result.bytes);  // give the memory back
  }
  return result;
}

ReadResult open_and_read(const std::string& path, std::size_t limit,
                         const LimitForHead* limit_for_head) {
  OwnedDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.value < 0) {
    ReadResult result;
    result.status = ReadStatus::cannot_open;
    result.limit = limit;
    result.reason = std::strerror(errno);
    return result;
  }
  return read_bounded(file.value, limit, limit_for_head);
}

}  // namespace

ReadResult read_file(const std::string& path, std::size_t limit) {
  return open_and_read(path, limit, nullptr);
}

ReadResult read_file(const std::string& path, const LimitForHead& limit_for_head) {
  return open_and_read(path, 0, &limit_for_head);
}

ReadResult read_descriptor(int descriptor, std::size_t limit) {
  return read_bounded(descriptor, limit, nullptr);
}

std::string limit_text(std::size_t bytes) {
  constexpr std::array<const char*, 5> units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  std::string out = std::to_string(bytes) + " bytes";
  if (bytes < 1024) return out;
  std::size_t unit = 0;
  std::size_t scale = 1024;
  while (unit + 1 < units.size() && bytes / scale >= 1024) {
    scale *= 1024;
    ++unit;
  }
  const std::size_t whole = bytes / scale;
  // One decimal, rounded down: 1048575 bytes is "1023.9 KiB", never "1 MiB".
  const std::size_t tenths = (bytes % scale) * 10 / scale;
  out += " (" + std::to_string(whole);
  if (bytes % scale != 0) out += "." + std::to_string(tenths);
  return out + " " + units[unit] + ")";
}

std::string quoted_path(std::string_view path) {
  return "'" + std::string(path.substr(0, 200)) + "'";
}

std::string failure_text(const ReadResult& result, std::string_view input) {
  switch (result.status) {
    case ReadStatus::ok:
      return {};
    case ReadStatus::cannot_open:
      // The CLI's wording since its first version; the reason is not added to keep it.
      return "cannot open " + std::string(input);
    case ReadStatus::cannot_read:
      return "cannot read " + std::string(input) + ": " + result.reason;
    case ReadStatus::over_limit:
      return std::string(input) + " is larger than the limit of " + limit_text(result.limit) +
             ": reading stopped after " + std::to_string(result.bytes_read) + " bytes";
  }
  return {};
}

}  // namespace stagemem_io
