// An artifact's manifest about a subject, byte for byte (its digest is what
// referrers name), and the referrers tag's index kept across pushes.
#include "registry/artifact_manifest.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "registry/manifest.h"

namespace cudagate {
namespace {

const Descriptor kArtifactSubject{
    "application/vnd.oci.image.manifest.v1+json", "sha256:" + std::string(64, 'a'), 1234, "", {}};

ArtifactContent artifact_content() {
  return ArtifactContent{"application/vnd.example.v1+json",
                         "application/vnd.example.v1+json",
                         R"({"x":1})",
                         {{"b.key", "2"}, {"a.key", "1"}}};
}

TEST(ArtifactManifest, TheOciShapeWithTheEmptyConfigAndTheSubject) {
  const ArtifactManifest out = artifact_manifest(artifact_content(), kArtifactSubject);
  EXPECT_EQ(
      out.body,
      R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
      R"("artifactType":"application/vnd.example.v1+json",)"
      R"("config":{"mediaType":"application/vnd.oci.empty.v1+json",)"
      R"("digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},)"
      R"("layers":[{"mediaType":"application/vnd.example.v1+json","digest":")" +
          sha256_digest(R"({"x":1})") +
          R"(","size":7}],)"
          R"("subject":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:)" +
          std::string(64, 'a') +
          R"(","size":1234},)"
          R"("annotations":{"a.key":"1","b.key":"2"}})");
  EXPECT_EQ(sha256_digest(kOciEmptyContent), kOciEmptyDigest);
  EXPECT_EQ(out.descriptor.digest, sha256_digest(out.body));
  EXPECT_EQ(out.descriptor.size, out.body.size());
  EXPECT_EQ(out.descriptor.media_type, kOciManifest);
  EXPECT_EQ(out.descriptor.artifact_type, "application/vnd.example.v1+json");
  EXPECT_EQ(out.descriptor.annotations, artifact_content().annotations);
  EXPECT_EQ(referrers_tag(kArtifactSubject.digest), "sha256-" + std::string(64, 'a'));
}

TEST(ArtifactManifest, ReferrersIndexAppendsOnceAndKeepsOthers) {
  const ArtifactManifest first = artifact_manifest(artifact_content(), kArtifactSubject);
  auto created = referrers_index_with("", first.descriptor);
  ASSERT_TRUE(created) << created.error().str();
  const auto index = nlohmann::json::parse(*created);
  EXPECT_EQ(index["schemaVersion"], 2);
  EXPECT_EQ(index["mediaType"], kOciIndex);
  ASSERT_EQ(index["manifests"].size(), 1U);
  EXPECT_EQ(index["manifests"][0],
            nlohmann::json::parse(R"({"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
                                  R"("digest":")" +
                                  first.descriptor.digest + R"(","size":)" +
                                  std::to_string(first.body.size()) +
                                  R"(,"artifactType":"application/vnd.example.v1+json",)"
                                  R"("annotations":{"a.key":"1","b.key":"2"}})"));
  auto again = referrers_index_with(*created, first.descriptor);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *created);

  ArtifactContent other = artifact_content();
  other.layer = R"({"x":2})";
  const ArtifactManifest second = artifact_manifest(other, kArtifactSubject);
  auto both = referrers_index_with(*created, second.descriptor);
  ASSERT_TRUE(both);
  const auto listed = nlohmann::json::parse(*both)["manifests"];
  ASSERT_EQ(listed.size(), 2U);
  EXPECT_EQ(listed[0]["digest"], first.descriptor.digest);
  EXPECT_EQ(listed[1]["digest"], second.descriptor.digest);
}

TEST(ArtifactManifest, AnotherDocumentAtTheTagIsAnError) {
  const Descriptor d = artifact_manifest(artifact_content(), kArtifactSubject).descriptor;
  struct Row {
    const char* existing;
    const char* where;
  };
  for (const Row& row : {Row{"[]", "referrers index"}, Row{"not json", "referrers index"},
                         Row{R"({"mediaType":"application/vnd.oci.image.manifest.v1+json"})",
                             "referrers index/mediaType"},
                         Row{R"({"manifests":{}})", "referrers index/manifests"}}) {
    auto out = referrers_index_with(row.existing, d);
    ASSERT_FALSE(out) << row.existing;
    EXPECT_EQ(out.error().where, row.where) << row.existing;
  }
  // An entry of another shape is kept as it is.
  auto kept = referrers_index_with(R"({"manifests":[1,{"digest":2}]})", d);
  ASSERT_TRUE(kept);
  EXPECT_EQ(nlohmann::json::parse(*kept)["manifests"].size(), 3U);
}

}  // namespace
}  // namespace cudagate
