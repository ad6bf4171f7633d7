// Images stored on disk, scanned: an OCI layout written blob by blob (a
// multi-platform index, gzip and zstd layers, a layer that deletes a
// library), the docker archive skopeo makes of it, and a root file system.
// skopeo checking every digest of the layout on its copy shows the layout
// is a real one. Errors name the file and the field.
#include "inputs/image_files.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/scan/scan_bytes.h"
#include "tests/support/layer_tools.h"

namespace cudagate {
namespace {

using nlohmann::json;
using test_support::LayerWorkdir;

std::string text_of(const scan::testing::ByteVector& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// A shared library whose fatbin holds SASS for `sm` only.
std::string library_for(unsigned sm) {
  using namespace scan::testing;
  ElfSpec spec;
  spec.machine = 62;
  spec.sections.push_back(
      {".nv_fatbin",
       fatbin_bytes({entry_bytes({.kind = 2, .sm = sm, .payload = cubin_bytes(sm)})})});
  return text_of(elf_bytes(spec));
}

// Writes an OCI layout under work/"oci" blob by blob, digests from
// sha256sum, and returns the digest of what index.json names "cuda".
class OciLayout {
 public:
  explicit OciLayout(LayerWorkdir& work) : work_(work) {
    work_.run("mkdir -p oci/blobs/sha256");
    work_.write("oci/oci-layout", R"({"imageLayoutVersion": "1.0.0"})");
  }

  // Stores the file `relative` as a blob; its digest and size.
  std::pair<std::string, std::uint64_t> blob(const std::string& relative) {
    work_.run("h=$(sha256sum " + relative + " | cut -d' ' -f1) && cp " + relative +
              " oci/blobs/sha256/$h && echo -n sha256:$h > " + relative + ".digest");
    const auto digest = work_.read(relative + ".digest");
    return {std::string(reinterpret_cast<const char*>(digest.data()), digest.size()),
            work_.read(relative).size()};
  }

  std::pair<std::string, std::uint64_t> json_blob(const std::string& name, const json& value) {
    work_.write(name, value.dump());
    return blob(name);
  }

  // An image of `layers` (files already made) for `arch`.
  json image(const std::vector<std::pair<std::string, std::string>>& layers,
             const std::string& arch) {
    json diff_ids = json::array();
    json layer_descriptors = json::array();
    for (const auto& [file, media_type] : layers) {
      const auto [digest, size] = blob(file);
      // The digest of the uncompressed tar, which skopeo checks.
      const std::string unpack = file.ends_with(".gz")    ? "gzip -dc "
                                 : file.ends_with(".zst") ? "zstd -q -dc "
                                                          : "cat ";
      work_.run(unpack + file + " | sha256sum | cut -d' ' -f1 | tr -d '\\n' > " + file + ".diff");
      const auto diff = work_.read(file + ".diff");
      diff_ids.push_back("sha256:" +
                         std::string(reinterpret_cast<const char*>(diff.data()), diff.size()));
      layer_descriptors.push_back({{"mediaType", media_type}, {"digest", digest}, {"size", size}});
    }
    const auto [config, config_size] = json_blob(
        "config-" + arch + ".json", {{"architecture", arch},
                                     {"os", "linux"},
                                     {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}});
    const auto [manifest, manifest_size] = json_blob(
        "manifest-" + arch + ".json", {{"schemaVersion", 2},
                                       {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                                       {"config",
                                        {{"mediaType", "application/vnd.oci.image.config.v1+json"},
                                         {"digest", config},
                                         {"size", config_size}}},
                                       {"layers", layer_descriptors}});
    return {{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
            {"digest", manifest},
            {"size", manifest_size},
            {"platform", {{"architecture", arch}, {"os", "linux"}}}};
  }

  void index(const json& manifests) {
    work_.write("oci/index.json", json{{"schemaVersion", 2}, {"manifests", manifests}}.dump());
  }

 private:
  LayerWorkdir& work_;
};

class ImageFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    // amd64: layer 1 (gzip) two libraries and the runtime; layer 2 (zstd)
    // deletes one and adds one. arm64: one uncompressed layer.
    work_.write("a1/usr/local/cuda/lib64/libcudart.so.12.8.90", "not ELF");
    work_.write("a1/opt/lib/libold.so", library_for(70));
    work_.write("a1/opt/lib/libkeep.so", library_for(80));
    work_.write("a2/opt/lib/.wh.libold.so", "");
    work_.write("a2/opt/lib/libnew.so", library_for(90));
    work_.write("r1/opt/lib/libgrace.so", library_for(90));
    work_.run(
        "tar -C a1 -czf a1.tar.gz . && tar -C a2 -cf - . | zstd -q -c > a2.tar.zst && "
        "tar -C r1 -cf r1.tar .");
    OciLayout layout(work_);
    const json amd64 = layout.image({{"a1.tar.gz", "application/vnd.oci.image.layer.v1.tar+gzip"},
                                     {"a2.tar.zst", "application/vnd.oci.image.layer.v1.tar+zstd"}},
                                    "amd64");
    const json arm64 =
        layout.image({{"r1.tar", "application/vnd.oci.image.layer.v1.tar"}}, "arm64");
    const auto [index_digest, index_size] = layout.json_blob(
        "image-index.json", {{"schemaVersion", 2},
                             {"mediaType", "application/vnd.oci.image.index.v1+json"},
                             {"manifests", {amd64, arm64}}});
    amd64_digest_ = amd64["digest"];
    layout.index({{{"mediaType", "application/vnd.oci.image.index.v1+json"},
                   {"digest", index_digest},
                   {"size", index_size},
                   {"annotations", {{"org.opencontainers.image.ref.name", "cuda"}}}},
                  {{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                   {"digest", arm64["digest"]},
                   {"size", arm64["size"]},
                   {"annotations", {{"org.opencontainers.image.ref.name", "grace"}}}}});
  }

  static std::vector<std::string> paths_of(const scan::ImageScan& scan) {
    std::vector<std::string> out;
    for (const auto& f : scan.files) out.push_back(f.path + " " + f.sass.front().str());
    return out;
  }

  LayerWorkdir work_;
  std::string amd64_digest_;
};

TEST_F(ImageFiles, AnOciLayoutByReferenceAndPlatform) {
  const std::string dir = (work_.path() / "oci").string();
  auto amd64 = scan_oci_layout(dir, "cuda", "");
  ASSERT_TRUE(amd64) << amd64.error().str();
  EXPECT_EQ(amd64->digest, amd64_digest_);
  EXPECT_EQ(amd64->platform, "linux/amd64");
  EXPECT_EQ(paths_of(amd64->scan),
            (std::vector<std::string>{"opt/lib/libkeep.so 8.0", "opt/lib/libnew.so 9.0"}));
  ASSERT_TRUE(amd64->scan.cuda_runtime);
  EXPECT_EQ(amd64->scan.cuda_runtime->version, "12.8.90");
  EXPECT_TRUE(amd64->scan.problems.empty());

  auto arm64 = scan_oci_layout(dir, "cuda", "linux/arm64");
  ASSERT_TRUE(arm64) << arm64.error().str();
  EXPECT_EQ(arm64->platform, "linux/arm64");
  EXPECT_EQ(paths_of(arm64->scan), std::vector<std::string>{"opt/lib/libgrace.so 9.0"});
  auto grace = scan_oci_layout(dir, "grace", "");
  ASSERT_TRUE(grace) << grace.error().str();
  EXPECT_EQ(paths_of(grace->scan), std::vector<std::string>{"opt/lib/libgrace.so 9.0"});
}

TEST_F(ImageFiles, LayoutErrorsNameTheFileAndTheChoice) {
  const std::string dir = (work_.path() / "oci").string();
  struct Row {
    std::string reference;
    std::string platform;
    std::string error;
  };
  const Row rows[] = {
      {"", "",
       dir + "/index.json: holds 2 manifests; name one as DIR:REF (references: \"cuda\", "
             "\"grace\")"},
      {"nope", "",
       dir + "/index.json: has no manifest named \"nope\" (references: \"cuda\", "
             "\"grace\")"},
  };
  for (const Row& row : rows) {
    auto scanned = scan_oci_layout(dir, row.reference, row.platform);
    ASSERT_FALSE(scanned) << row.reference;
    EXPECT_EQ(scanned.error().str(), row.error);
  }
  auto s390 = scan_oci_layout(dir, "cuda", "linux/s390x");
  ASSERT_FALSE(s390);
  EXPECT_NE(s390.error().str().find("the image index has no manifest for linux/s390x (it has "
                                    "linux/amd64, linux/arm64)"),
            std::string::npos)
      << s390.error().str();
  auto missing = scan_oci_layout((work_.path() / "nothing").string(), "", "");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(missing.error().str().find("/nothing/oci-layout") != std::string::npos)
      << missing.error().str();
}

TEST(ImageFilesShapes, JsonOfTheWrongShapeIsAnErrorNamingTheFile) {
  LayerWorkdir work;
  work.run("mkdir -p oci/blobs/sha256");
  work.write("oci/oci-layout", R"({"imageLayoutVersion": "1.0.0"})");
  const std::string dir = (work.path() / "oci").string();
  const std::string blob(64, 'a');
  work.write("oci/blobs/sha256/" + blob, "[1, 2]");  // a manifest that is a list
  struct Row {
    std::string index;
    std::string error;
  };
  const Row rows[] = {
      {"[]", dir + "/index.json: manifests: expected a non-empty list"},
      {R"({"manifests": ["x"]})", dir + ": a manifest digest that is not one: \"\""},
      {R"({"manifests": [{"digest": "sha256:../../etc/passwd"}]})",
       dir + ": a manifest digest that is not one: \"sha256:../../etc/passwd\""},
      {R"({"manifests": [{"digest": "sha256:)" + blob + R"(", "annotations": 3}]})",
       "blob sha256:" + blob + ": layers: expected a list"},
      {R"({"manifests": [{"digest": "sha256:)" + blob +
           R"(", "mediaType": "application/vnd.oci.image.index.v1+json"}]})",
       "blob sha256:" + blob + ": manifests: expected a list"},
  };
  for (const Row& row : rows) {
    work.write("oci/index.json", row.index);
    auto scanned = scan_oci_layout(dir, "", "");
    ASSERT_FALSE(scanned) << row.index;
    EXPECT_EQ(scanned.error().str(), row.error) << row.index;
  }
}

TEST_F(ImageFiles, TheDockerArchiveSkopeoMakesOfTheLayout) {
  // skopeo verifies each blob's digest as it copies: the layout is sound.
  // Docker's image format takes no zstd layers, so the archive is made of
  // the arm64 image (one uncompressed layer); skopeo writes its layer as a
  // file of the archive beside manifest.json and the config.
  work_.run(
      "skopeo --insecure-policy copy -q oci:oci:grace docker-archive:image.tar:grace:test "
      ">skopeo.log 2>&1 || { cat skopeo.log >&2; false; }");
  auto scanned = scan_docker_archive((work_.path() / "image.tar").string(), "");
  ASSERT_TRUE(scanned) << scanned.error().str();
  EXPECT_EQ(scanned->platform, "linux/arm64");
  EXPECT_EQ(scanned->scan.layers, 1U);
  EXPECT_EQ(paths_of(scanned->scan), std::vector<std::string>{"opt/lib/libgrace.so 9.0"});
  auto wrong = scan_docker_archive((work_.path() / "image.tar").string(), "linux/amd64");
  ASSERT_FALSE(wrong);
  EXPECT_TRUE(wrong.error().str().ends_with("the image is for linux/arm64, not linux/amd64"))
      << wrong.error().str();
  work_.run(
      "mkdir big && head -c 17000000 /dev/zero > big/manifest.json && "
      "tar -C big -cf big.tar manifest.json");
  auto big = scan_docker_archive((work_.path() / "big.tar").string(), "");
  ASSERT_FALSE(big);
  EXPECT_TRUE(big.error().str().ends_with(
      "big.tar: manifest.json: is 17000000 bytes, over the limit of 16777216"))
      << big.error().str();
  work_.write("not-an-archive.tar", std::string(1024, '\0'));
  auto empty = scan_docker_archive((work_.path() / "not-an-archive.tar").string(), "");
  ASSERT_FALSE(empty);
  EXPECT_TRUE(empty.error().str().ends_with("has no manifest.json; not a docker archive"));
}

TEST_F(ImageFiles, ARootFilesystem) {
  work_.run("cp -r a1 root && cp a2/opt/lib/libnew.so root/opt/lib/ && ln -s /etc/passwd root/x");
  auto scanned = scan_rootfs((work_.path() / "root").string());
  ASSERT_TRUE(scanned) << scanned.error().str();
  EXPECT_EQ(paths_of(scanned->scan),
            (std::vector<std::string>{"opt/lib/libkeep.so 8.0", "opt/lib/libnew.so 9.0",
                                      "opt/lib/libold.so 7.0"}));
  EXPECT_EQ(scanned->scan.cuda_runtime->version, "12.8.90");
  EXPECT_FALSE(scan_rootfs((work_.path() / "a1.tar.gz").string()));
}

}  // namespace
}  // namespace cudagate
