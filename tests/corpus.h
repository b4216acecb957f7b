// corpus.h — reads the test corpora under tests/ (tests/links, tests/bad-inputs).
//
// A corpus file holds one entry per line; lines starting with the comment marker and empty lines
// are skipped. Entries may spell awkward bytes as escapes: \t \n \r \\ \xNN.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace stagemem_tests {

#ifndef STAGEMEM_TESTS_DIR
#error "STAGEMEM_TESTS_DIR must name the tests/ source directory"
#endif

inline std::string corpus_path(const std::string& relative) {
  return std::string(STAGEMEM_TESTS_DIR) + "/" + relative;
}

// The whole file. A file that cannot be opened or read throws (std::runtime_error or
// std::filesystem::filesystem_error, naming it), so a test over a missing corpus fails instead of
// reading nothing.
inline std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream text;
  // Nothing copied is an error unless the file is empty (file_size throws for a directory).
  if (!(text << in.rdbuf()) && std::filesystem::file_size(path) != 0)
    throw std::runtime_error("cannot read " + path);
  return text.str();
}

inline std::string unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 >= text.size()) {
      out += text[i];
      continue;
    }
    const char next = text[++i];
    if (next == 't')
      out += '\t';
    else if (next == 'n')
      out += '\n';
    else if (next == 'r')
      out += '\r';
    else if (next == 'x' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += next;
    }
  }
  return out;
}

struct CorpusEntry {
  int line = 0;
  std::string first;   // before the first tab
  std::string second;  // after it
};

// Entries split at the first tab; `comment` marks comment lines ("#" or "//").
inline std::vector<CorpusEntry> read_corpus(const std::string& relative,
                                            const std::string& comment) {
  std::vector<CorpusEntry> entries;
  std::istringstream lines(read_whole_file(corpus_path(relative)));
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.empty() || line.starts_with(comment)) continue;
    const auto tab = line.find('\t');
    entries.push_back({number, line.substr(0, tab),
                       tab == std::string::npos ? std::string() : line.substr(tab + 1)});
  }
  return entries;
}

}  // namespace stagemem_tests
