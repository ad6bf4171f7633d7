// Reading input files: whole, from a path or stdin, with errors that name the file.
#include "inputs/input_files.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace cudagate {
namespace {

TEST(ReadInput, ReadsAWholeFile) {
  const std::string path = testing::TempDir() + "input_files_read_input.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(200000, 'x') << "end";
  }
  auto text = read_input(path);
  ASSERT_TRUE(text) << text.error().str();
  EXPECT_EQ(text->size(), 200003u);
  EXPECT_EQ(text->substr(text->size() - 3), "end");
  std::remove(path.c_str());
}

TEST(ReadInput, ErrorsNameTheFileAndTheReason) {
  struct Row {
    std::string path;
    std::string error;
  };
  const Row rows[] = {
      {"/nonexistent-dir/nodes.json",
       "/nonexistent-dir/nodes.json: cannot read: No such file or directory"},
      {"/", "/: cannot read: Is a directory"},
  };
  for (const auto& row : rows) {
    auto text = read_input(row.path);
    ASSERT_FALSE(text) << row.path;
    EXPECT_EQ(text.error().str(), row.error);
  }
}

TEST(DisplayName, StdinHasAName) {
  EXPECT_EQ(display_name("-"), "<stdin>");
  EXPECT_EQ(display_name("pod.yaml"), "pod.yaml");
}

}  // namespace
}  // namespace cudagate
