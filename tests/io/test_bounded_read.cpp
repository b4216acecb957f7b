// The bounded reader of the front ends (src/io/bounded_read.h): regular files, pipes, character
// devices and standard input are read alike, to the end or to the limit plus one byte, and
// nothing past that byte is read.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "bounded_read.h"
#include "catch.h"

using stagemem_io::ReadResult;
using stagemem_io::ReadStatus;

namespace {

// A file in the temporary directory holding `bytes`, removed when the test ends.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& bytes) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "stagemem_io_test_XXXXXX").string();
    const int descriptor = ::mkstemp(pattern.data());
    REQUIRE(descriptor >= 0);
    ::close(descriptor);
    path = pattern;
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

// A pipe whose ends close when the test ends.
struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int ends[2];
    REQUIRE(::pipe(ends) == 0);
    read_end = ends[0];
    write_end = ends[1];
  }
  void close_write() {
    if (write_end >= 0) ::close(write_end);
    write_end = -1;
  }
  ~Pipe() {
    if (read_end >= 0) ::close(read_end);
    close_write();
  }
};

void write_all(int descriptor, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = ::write(descriptor, bytes.data() + done, bytes.size() - done);
    REQUIRE(wrote > 0);
    done += static_cast<std::size_t>(wrote);
  }
}

}  // namespace

TEST_CASE("A regular file within its limit is read whole, byte for byte") {
  const std::string bytes("{\"a\": 1}\n\0\xff\x80 end", 16);
  const TempFile file(bytes);
  // At the limit exactly: the 16 bytes are the whole input, not one past the limit.
  const ReadResult read = stagemem_io::read_file(file.path, 16);
  REQUIRE(read.status == ReadStatus::ok);
  CHECK(read.bytes == bytes);
  CHECK(read.bytes_read == 16);
  CHECK(read.limit == 16);
  CHECK(stagemem_io::failure_text(read, "x").empty());
}

TEST_CASE("An empty file is read as empty, even with a limit of 0") {
  const TempFile file("");
  const ReadResult read = stagemem_io::read_file(file.path, 0);
  REQUIRE(read.status == ReadStatus::ok);
  CHECK(read.bytes.empty());
  // One byte over a limit of 0 is over it.
  const TempFile one("x");
  CHECK(stagemem_io::read_file(one.path, 0).status == ReadStatus::over_limit);
}

TEST_CASE("A regular file of limit + 1 bytes is over the limit, and nothing past it is read") {
  const TempFile file(std::string(5000, 'x'));
  const ReadResult read = stagemem_io::read_file(file.path, 4999);
  REQUIRE(read.status == ReadStatus::over_limit);
  CHECK(read.bytes_read == 5000);
  CHECK(read.bytes.empty());  // the memory is given back
  // Through a descriptor the offset shows what was read: 1000 + 1 of the 5000 bytes, although
  // fstat said 5000 (the size reserves memory, it never decides the outcome).
  const int descriptor = ::open(file.path.c_str(), O_RDONLY);
  REQUIRE(descriptor >= 0);
  const ReadResult part = stagemem_io::read_descriptor(descriptor, 1000);
  CHECK(part.status == ReadStatus::over_limit);
  CHECK(part.bytes_read == 1001);
  CHECK(::lseek(descriptor, 0, SEEK_CUR) == 1001);
  ::close(descriptor);
}

TEST_CASE("/dev/zero and /dev/urandom stop at the limit plus one byte") {
  for (const char* device : {"/dev/zero", "/dev/urandom"}) {
    INFO(device);
    // 64 MiB, the memory log's limit: 67,108,864 + 1 bytes are read, then reading stops.
    const std::size_t limit = std::size_t{64} << 20;
    const ReadResult read = stagemem_io::read_file(device, limit);
    REQUIRE(read.status == ReadStatus::over_limit);
    CHECK(read.bytes_read == limit + 1);
    CHECK(read.limit == limit);
  }
  const ReadResult read = stagemem_io::read_file("/dev/zero", std::size_t{1} << 20);
  CHECK(stagemem_io::failure_text(read, stagemem_io::quoted_path("/dev/zero")) ==
        "'/dev/zero' is larger than the limit of 1048576 bytes (1 MiB): reading stopped after "
        "1048577 bytes");
}

TEST_CASE("A pipe that never ends stops at the limit plus one byte") {
  std::signal(SIGPIPE, SIG_IGN);  // the writer learns of the closed pipe from EPIPE
  Pipe pipe;
  std::atomic<std::size_t> written = 0;
  std::thread writer([&] {
    const std::string block(4096, 'y');
    while (true) {
      const ssize_t wrote = ::write(pipe.write_end, block.data(), block.size());
      if (wrote <= 0) return;  // EPIPE: the reader is gone
      written += static_cast<std::size_t>(wrote);
    }
  });
  const std::size_t limit = 300'000;  // more than a pipe holds (64 KiB), so the writer keeps up
  const ReadResult read = stagemem_io::read_descriptor(pipe.read_end, limit);
  ::close(pipe.read_end);
  pipe.read_end = -1;
  writer.join();
  REQUIRE(read.status == ReadStatus::over_limit);
  CHECK(read.bytes_read == limit + 1);
  CHECK(written.load() >= limit + 1);
}

TEST_CASE("A pipe is read to its end within the limit, and only to limit + 1 beyond it") {
  Pipe pipe;
  write_all(pipe.write_end, std::string(1100, 'z'));  // fits in the pipe's buffer
  pipe.close_write();
  const ReadResult read = stagemem_io::read_descriptor(pipe.read_end, 1000);
  REQUIRE(read.status == ReadStatus::over_limit);
  CHECK(read.bytes_read == 1001);
  // The other 99 bytes are still in the pipe: the reader asked for no more than limit + 1.
  char rest[200];
  CHECK(::read(pipe.read_end, rest, sizeof rest) == 99);

  Pipe whole;
  write_all(whole.write_end, "[Rank 0] log\n");
  whole.close_write();
  const ReadResult all = stagemem_io::read_descriptor(whole.read_end, 1000);
  REQUIRE(all.status == ReadStatus::ok);
  CHECK(all.bytes == "[Rank 0] log\n");
}

TEST_CASE("Standard input is read like any descriptor") {
  Pipe pipe;
  write_all(pipe.write_end, std::string(2000, 'w'));
  pipe.close_write();
  const int saved = ::dup(0);
  REQUIRE(saved >= 0);
  REQUIRE(::dup2(pipe.read_end, 0) == 0);
  const ReadResult over = stagemem_io::read_descriptor(0, 1500);
  ::dup2(saved, 0);
  ::close(saved);
  REQUIRE(over.status == ReadStatus::over_limit);
  CHECK(over.bytes_read == 1501);
  CHECK(stagemem_io::failure_text(over, "standard input (-)") ==
        "standard input (-) is larger than the limit of 1500 bytes (1.4 KiB): reading stopped "
        "after 1501 bytes");
}

TEST_CASE("A missing file cannot be opened, a directory cannot be read") {
  const ReadResult missing = stagemem_io::read_file("/nonexistent/stagemem/x.json", 100);
  CHECK(missing.status == ReadStatus::cannot_open);
  CHECK(stagemem_io::failure_text(missing,
                                  stagemem_io::quoted_path("/nonexistent/stagemem/x.json")) ==
        "cannot open '/nonexistent/stagemem/x.json'");
  const std::string directory = std::filesystem::temp_directory_path().string();
  const ReadResult folder = stagemem_io::read_file(directory, 100);
  CHECK(folder.status == ReadStatus::cannot_read);
  CHECK(stagemem_io::failure_text(folder, "'dir'") == "cannot read 'dir': Is a directory");
  CHECK(folder.bytes.empty());
}

TEST_CASE("The first bytes can choose the limit (the app's snapshot or text)") {
  // Pickle's PROTO opcode (0x80) and protocol 4 first: the large limit; anything else the small.
  std::string seen;
  const auto limit_for = [&seen](std::string_view head) -> std::size_t {
    seen = std::string(head);
    return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 ? 100 : 10;
  };
  const TempFile pickle(std::string("\x80\x04") + std::string(60, 'p'));
  const ReadResult big = stagemem_io::read_file(pickle.path, limit_for);
  CHECK(big.status == ReadStatus::ok);
  CHECK(big.limit == 100);
  CHECK(seen.size() == stagemem_io::head_bytes);  // the head only, not the whole file
  CHECK(big.bytes.size() == 62);

  const TempFile text(std::string(62, 't'));
  const ReadResult small = stagemem_io::read_file(text.path, limit_for);
  CHECK(small.status == ReadStatus::over_limit);
  CHECK(small.limit == 10);
  // The head (16 bytes) was read before the limit of 10 was known: it is over, at 16 bytes.
  CHECK(small.bytes_read == stagemem_io::head_bytes);

  const TempFile tiny("{}");
  const ReadResult short_file = stagemem_io::read_file(tiny.path, limit_for);
  CHECK(seen == "{}");  // shorter than the head: the whole input
  CHECK(short_file.status == ReadStatus::ok);
  CHECK(short_file.bytes == "{}");
}

TEST_CASE("Limits are written in bytes and a binary unit, rounded down") {
  using stagemem_io::limit_text;
  CHECK(limit_text(100) == "100 bytes");
  CHECK(limit_text(1024) == "1024 bytes (1 KiB)");
  CHECK(limit_text(1536) == "1536 bytes (1.5 KiB)");  // 1536 / 1024 = 1.5
  CHECK(limit_text(std::size_t{1} << 20) == "1048576 bytes (1 MiB)");
  CHECK(limit_text(std::size_t{4} << 20) == "4194304 bytes (4 MiB)");
  CHECK(limit_text(std::size_t{64} << 20) == "67108864 bytes (64 MiB)");
  CHECK(limit_text(std::size_t{1} << 30) == "1073741824 bytes (1 GiB)");
  // 1048575 / 1024 = 1023.999 KiB: one decimal rounded down, never "1 MiB".
  CHECK(limit_text((std::size_t{1} << 20) - 1) == "1048575 bytes (1023.9 KiB)");
}
