// The lines of text that say why a workload got its verdict.
#include "report/finding_text.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/audit_fixture.h"

namespace cudagate {
namespace {

using test_support::workload_named;

TEST(FindingText, ReasonLineOfEachKindOfResult) {
  const Audit audit = test_support::fixture_audit();
  EXPECT_EQ(reason_line(workload_named(audit, "trainer")),
            "[cuda-driver] train: needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2");
  EXPECT_EQ(reason_line(workload_named(audit, "notebook")), "");
  EXPECT_EQ(reason_line(workload_named(audit, "web")), "no GPU container");
  EXPECT_NE(reason_line(workload_named(audit, "typo")).find("cudagate.io/cuda-version"),
            std::string::npos);
}

TEST(FindingText, FindingsTextListsGroupsFindingsAndFixes) {
  const std::string text = findings_text(workload_named(test_support::fixture_audit(), "trainer"));
  EXPECT_EQ(text.rfind("incompatible on 2 nodes (gpu-t4-1, gpu-t4-2): driver 535.129.03, max CUDA "
                       "12.2, compute capability 7.5, Tesla-T4\n",
                       0),
            0U)
      << text;
  EXPECT_NE(text.find("\n    fix: upgrade the driver"), std::string::npos) << text;
}

TEST(FindingText, ShortenCutsAtACharacterBoundary) {
  EXPECT_EQ(shorten("short", 10), "short");
  EXPECT_EQ(shorten("abcdefghijkl", 8), "abcde...");
  // "é" is two bytes; a cut inside it backs up before it.
  EXPECT_EQ(shorten("abcd\xC3\xA9xyz", 8), "abcd...");
}

}  // namespace
}  // namespace cudagate
