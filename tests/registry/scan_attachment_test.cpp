// The scan attached to an image manifest, read from referrers indexes shaped
// as registries answer them (the referrers API and the referrers tag schema:
// each descriptor with its artifact's artifactType and annotations).
#include "registry/scan_attachment.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "registry/manifest.h"

namespace cudagate {
namespace {

using nlohmann::json;

const std::string kSubject = sha256_digest("the image manifest");
const std::string kOtherSubject = sha256_digest("another image manifest");

json attachment_facts(const std::string& subject) {
  return {{"digest", subject},
          {"platform", "linux/amd64"},
          {"cudaRuntime", "12.6.77"},
          {"cudaCompat", nullptr},
          {"framework",
           {{"name", "pytorch"},
            {"version", "2.5.1+cu124"},
            {"cuda", "12.4"},
            {"path", "/usr/lib/python3/dist-packages/torch/version.py"}}},
          {"files",
           {{{"path", "/usr/lib/libz.so"}, {"sass", {"8.0", "9.0a"}}, {"ptx", {"9.0"}}},
            {{"path", "/opt/app/kernels.so"},
             {"sass", {"8.0", "9.0", "10.0f", "9.0?"}},
             {"ptx", {"9.0", "10.0f"}}}}}};
}

// One referrer's descriptor as the registry lists it.
json attachment_descriptor(const std::string& facts, const std::string& created,
                           const std::string& name = "scan",
                           std::string_view type = kScanArtifactType) {
  json annotations = {{std::string(kScanFactsAnnotation), facts}};
  if (!created.empty()) annotations[std::string(kCreatedAnnotation)] = created;
  return {{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
          {"digest", sha256_digest(name)},
          {"size", 812},
          {"artifactType", type},
          {"annotations", annotations}};
}

std::string attachment_index(const std::vector<json>& descriptors) {
  return json{{"schemaVersion", 2},
              {"mediaType", "application/vnd.oci.image.index.v1+json"},
              {"manifests", json(descriptors)}}
      .dump();
}

ScanFacts read_found(const std::string& index) {
  auto read = read_referrers(index, kSubject);
  if (!read) {
    ADD_FAILURE() << read.error().str();
    return {};
  }
  if (!read->has_value()) {
    ADD_FAILURE() << "expected a scan";
    return {};
  }
  return **read;
}

TEST(ScanAttachment, TheReferrersTargets) {
  EXPECT_EQ(referrers_target("ml/train", kSubject),
            "/v2/ml/train/referrers/" + kSubject +
                "?artifactType=application%2Fvnd.cudagate.scan.v1%2Bjson");
  EXPECT_EQ(referrers_tag_target("library/ubuntu", "sha256:0123abcd"),
            "/v2/library/ubuntu/manifests/sha256-0123abcd");
}

TEST(ScanAttachment, ReadsTheFactsOfTheSubjectsScan) {
  const ScanFacts facts = read_found(attachment_index(
      {attachment_descriptor(attachment_facts(kSubject).dump(), "2025-03-01T10:00:00Z")}));
  EXPECT_EQ(facts.digest, kSubject);
  EXPECT_EQ(facts.platform, "linux/amd64");
  EXPECT_EQ(facts.cuda_runtime, std::optional<std::string>("12.6.77"));
  EXPECT_EQ(facts.cuda_runtime_path, "");
  EXPECT_EQ(facts.cuda_compat, std::nullopt);
  EXPECT_EQ(facts.framework, "pytorch");
  EXPECT_EQ(facts.framework_version, "2.5.1+cu124");
  EXPECT_EQ(facts.framework_cuda, "12.4");
  EXPECT_EQ(facts.framework_path, "/usr/lib/python3/dist-packages/torch/version.py");
  // Files by path, each path as written.
  ASSERT_EQ(facts.files.size(), 2U);
  EXPECT_EQ(facts.files[0].path, "/opt/app/kernels.so");
  EXPECT_EQ(facts.files[1].path, "/usr/lib/libz.so");
  // SASS and PTX of one target merge; "9.0?" is the portable 9.0.
  EXPECT_EQ(facts.files[0].archs.str(), "8.0;9.0+PTX;10.0f+PTX");
  EXPECT_EQ(facts.files[1].archs.str(), "8.0;9.0(PTX);9.0a");
}

TEST(ScanAttachment, ArchitecturesAsTheScanWritesThem) {
  struct Row {
    std::vector<std::string> sass;
    std::vector<std::string> ptx;
    std::vector<ArchTarget> targets;
  };
  const ComputeCapability cc90(9, 0);
  const ComputeCapability cc100(10, 0);
  const ComputeCapability cc121(12, 1);
  const std::vector<Row> rows = {
      {{"9.0?"}, {}, {{cc90, ArchVariant::portable, true, false}}},
      {{"9.0?", "9.0"}, {"9.0"}, {{cc90, ArchVariant::portable, true, true}}},
      {{"9.0a"}, {"9.0a"}, {{cc90, ArchVariant::arch_specific, true, true}}},
      {{"10.0f"}, {}, {{cc100, ArchVariant::family, true, false}}},
      {{}, {"12.1"}, {{cc121, ArchVariant::portable, false, true}}},
      {{}, {}, {}},
  };
  for (const Row& row : rows) {
    json facts = attachment_facts(kSubject);
    facts["files"] = {{{"path", "/x.so"}, {"sass", row.sass}, {"ptx", row.ptx}}};
    const ScanFacts read =
        read_found(attachment_index({attachment_descriptor(facts.dump(), "2025-03-01T10:00:00Z")}));
    ASSERT_EQ(read.files.size(), 1U);
    EXPECT_EQ(read.files[0].archs.targets(), row.targets) << json(row.sass).dump();
  }
}

TEST(ScanAttachment, TheNewestScanOfTheSubjectWins) {
  const auto facts_with = [](const std::string& subject, const std::string& runtime) {
    json facts = attachment_facts(subject);
    facts["cudaRuntime"] = runtime;
    return facts.dump();
  };
  struct Row {
    const char* name;
    std::vector<json> descriptors;
    std::string runtime;  // of the scan read
  };
  const std::vector<Row> rows = {
      {"newest by time, wherever listed",
       {attachment_descriptor(facts_with(kSubject, "12.1.0"), "2025-03-02T00:00:00Z", "a"),
        attachment_descriptor(facts_with(kSubject, "12.4.0"), "2025-03-03T00:00:00Z", "b"),
        attachment_descriptor(facts_with(kSubject, "12.2.0"), "2025-03-01T00:00:00Z", "c")},
       "12.4.0"},
      {"offsets and fractions count",
       {attachment_descriptor(facts_with(kSubject, "12.1.0"), "2025-03-02T01:30:00.5+02:00", "a"),
        attachment_descriptor(facts_with(kSubject, "12.2.0"), "2025-03-01T23:30:00.25Z", "b")},
       "12.1.0"},
      {"equal times: the last listed",
       {attachment_descriptor(facts_with(kSubject, "12.1.0"), "2025-03-02T00:00:00Z", "a"),
        attachment_descriptor(facts_with(kSubject, "12.2.0"), "2025-03-02T00:00:00Z", "b")},
       "12.2.0"},
      {"undated counts as oldest",
       {attachment_descriptor(facts_with(kSubject, "12.1.0"), "2025-03-02T00:00:00Z", "a"),
        attachment_descriptor(facts_with(kSubject, "12.2.0"), "", "b")},
       "12.1.0"},
      {"a newer scan of another manifest is passed over",
       {attachment_descriptor(facts_with(kSubject, "12.1.0"), "2025-03-02T00:00:00Z", "a"),
        attachment_descriptor(facts_with(kOtherSubject, "12.8.0"), "2025-04-01T00:00:00Z", "b")},
       "12.1.0"},
      {"other artifact types are passed over (a registry ignoring the filter)",
       {attachment_descriptor(facts_with(kSubject, "12.1.0"), "2025-03-02T00:00:00Z", "a"),
        attachment_descriptor(facts_with(kSubject, "12.8.0"), "2025-04-01T00:00:00Z", "b",
                              "application/vnd.dev.sigstore.bundle.v0.3+json"),
        {{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
         {"digest", sha256_digest("sbom")},
         {"size", 10},
         {"artifactType", "application/spdx+json"}}},
       "12.1.0"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const ScanFacts facts = read_found(attachment_index(row.descriptors));
    EXPECT_EQ(facts.cuda_runtime.value_or(""), row.runtime);
  }
}

TEST(ScanAttachment, NoScanOfTheSubject) {
  for (const std::string& index :
       {attachment_index({}), json{{"schemaVersion", 2}, {"manifests", nullptr}}.dump(),
        attachment_index({attachment_descriptor(attachment_facts(kOtherSubject).dump(),
                                                "2025-03-01T10:00:00Z")}),
        // Our type without the facts: not a scan this reader can use.
        attachment_index({{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                           {"digest", sha256_digest("bare")},
                           {"artifactType", kScanArtifactType}}})}) {
    SCOPED_TRACE(index);
    const auto read = read_referrers(index, kSubject);
    ASSERT_TRUE(read) << read.error().str();
    EXPECT_FALSE(read->has_value());
  }
}

TEST(ScanAttachment, MalformedFactsNameTheReferrerAndTheField) {
  const std::string where =
      "referrer " + sha256_digest("scan") + ": annotation io.cudagate.scan.facts: ";
  struct Row {
    std::function<void(json&)> change;
    std::string error;
  };
  const std::vector<Row> rows = {
      {[](json& f) { f.erase("digest"); }, where + "digest: missing"},
      {[](json& f) { f["digest"] = 7; }, where + "digest: expected a string"},
      {[](json& f) { f["cudaRuntime"] = 12.6; }, where + "cudaRuntime: expected a string or null"},
      {[](json& f) { f["framework"] = "pytorch"; },
       where + "framework: expected an object or null"},
      {[](json& f) { f["framework"].erase("name"); }, where + "framework.name: missing"},
      {[](json& f) { f["files"] = json::array({"/x.so"}); },
       where + "files[0]: expected an object with path, sass and ptx"},
      {[](json& f) { f["files"][1]["sass"][3] = "9.0b"; },
       where + "files[1].sass[3]: expected an architecture X.Y with an optional a, f or ? suffix, "
               "got \"9.0b\""},
      {[](json& f) { f["files"][0]["ptx"][0] = "90"; },
       where + "files[0].ptx[0]: expected an architecture X.Y with an optional a, f or ? suffix, "
               "got \"90\""},
      {[](json& f) { f["files"][0]["ptx"] = "9.0"; },
       where + "files[0].ptx: expected an array of architectures"},
      {[](json& f) { f["files"][0].erase("path"); }, where + "files[0].path: missing"},
  };
  for (const Row& row : rows) {
    json facts = attachment_facts(kSubject);
    row.change(facts);
    const auto read = read_referrers(
        attachment_index({attachment_descriptor(facts.dump(), "2025-03-01T10:00:00Z")}), kSubject);
    ASSERT_FALSE(read) << row.error;
    EXPECT_EQ(read.error().str(), row.error);
  }
  // Not JSON at all, or not a string.
  auto read =
      read_referrers(attachment_index({attachment_descriptor("{\"digest\":", "")}), kSubject);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().str(), where.substr(0, where.size() - 2) + ": not valid JSON");
  json descriptor = attachment_descriptor("", "");
  descriptor["annotations"][std::string(kScanFactsAnnotation)] = attachment_facts(kSubject);
  read = read_referrers(attachment_index({descriptor}), kSubject);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().str(), where + "expected a string of JSON");
}

TEST(ScanAttachment, ANewerMalformedScanIsAnErrorNotPassedOver) {
  const auto read = read_referrers(
      attachment_index(
          {attachment_descriptor(attachment_facts(kSubject).dump(), "2025-03-01T00:00:00Z", "a"),
           attachment_descriptor("[]", "2025-03-02T00:00:00Z", "b")}),
      kSubject);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().where,
            "referrer " + sha256_digest("b") + ": annotation io.cudagate.scan.facts");
}

TEST(ScanAttachment, CreatedTimesThatCannotBeReadAreErrors) {
  for (const char* created : {"yesterday", "2025-02-29T00:00:00Z", "2025-03-01T24:00:00Z",
                              "2025-03-01T10:00:00", "2025-03-01T10:00:00.Z"}) {
    SCOPED_TRACE(created);
    const auto read = read_referrers(
        attachment_index({attachment_descriptor(attachment_facts(kSubject).dump(), created)}),
        kSubject);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().where, "referrer " + sha256_digest("scan") +
                                      ": annotation org.opencontainers.image.created");
  }
  for (const char* created :
       {"2024-02-29T23:59:60Z", "2025-03-01t10:00:00z", "2025-03-01 10:00:00.123456789123-05:30"}) {
    SCOPED_TRACE(created);
    EXPECT_TRUE(read_referrers(
        attachment_index({attachment_descriptor(attachment_facts(kSubject).dump(), created)}),
        kSubject));
  }
}

TEST(ScanAttachment, IndexesThatAreNotOneAndBounds) {
  struct Row {
    std::string body;
    std::string error;
  };
  json many = attachment_facts(kSubject);
  many["files"] = json::array();
  for (std::size_t i = 0; i <= kMaxScannedFiles; ++i) many["files"].push_back(json::object());
  const std::vector<Row> rows = {
      {"<html>404 page not found</html>", "referrers index: not valid JSON"},
      {"[]", "referrers index: expected a JSON object"},
      {R"({"manifests": {}})", "referrers index: manifests: expected an array of descriptors"},
      {std::string(kMaxReferrersBytes + 1, ' '),
       "referrers index: 4194305 bytes, more than 4194304"},
      {std::string(100, '[') + std::string(100, ']'),
       "referrers index: nested more than 32 levels at byte 32"},
      {attachment_index({attachment_descriptor(many.dump(), "")}),
       "referrer " + sha256_digest("scan") +
           ": annotation io.cudagate.scan.facts: files: 100001 files, more than 100000"},
  };
  for (const Row& row : rows) {
    const auto read = read_referrers(row.body, kSubject);
    ASSERT_FALSE(read) << row.error;
    EXPECT_EQ(read.error().str(), row.error);
  }
}

}  // namespace
}  // namespace cudagate
