// Field paths and places: the one way every reader names where an error is.
#include "types/field_path.h"

#include <gtest/gtest.h>

#include <string>

namespace cudagate {
namespace {

TEST(FieldPath, JoinsKeysWithDots) {
  EXPECT_EQ(field_path("", "spec"), "spec");
  EXPECT_EQ(field_path("spec", "containers"), "spec.containers");
  EXPECT_EQ(field_path("spec.containers[2]", "image"), "spec.containers[2].image");
  // A key is written as given, dots and all (label keys are).
  EXPECT_EQ(field_path("metadata.labels", "nvidia.com/gpu.product"),
            "metadata.labels.nvidia.com/gpu.product");
}

TEST(FieldPath, IndexesInBrackets) {
  EXPECT_EQ(index_path("spec.containers", 0), "spec.containers[0]");
  EXPECT_EQ(index_path("cudaReleases", 12), "cudaReleases[12]");
  EXPECT_EQ(index_path("", 3), "[3]");
  EXPECT_EQ(field_path(index_path("images", 1), "archs"), "images[1].archs");
}

TEST(FieldPath, PlacesLeaveOutWhatIsUnknown) {
  struct Row {
    std::string source;
    int line;
    std::string path;
    std::string want;
  };
  const Row rows[] = {
      {"policy.yaml", 12, "images[0].archs", "policy.yaml:12: images[0].archs"},
      {"policy.yaml", 0, "images[0].archs", "policy.yaml: images[0].archs"},
      {"policy.yaml", 12, "", "policy.yaml:12"},
      {"policy.yaml", -1, "", "policy.yaml"},
      {"", 0, "mode", "mode"},
      {"", 4, "mode", ":4: mode"},
      {"", 0, "", ""},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(place(row.source, row.line, row.path), row.want)
        << row.source << " " << row.line << " " << row.path;
  }
}

}  // namespace
}  // namespace cudagate
