// Image references normalised as the container runtime does, and malformed ones refused with
// an error that names the problem.
#include "policy/image/image_ref.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cudagate {
namespace {

const std::string kSha256 =
    "sha256:" + std::string("7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa");

TEST(ImageRef, NormalisesAsTheRuntimeDoes) {
  struct Row {
    std::string text;
    std::string registry, repository, tag, digest;
    std::string str;
  };
  const std::string tag128(128, 't');
  const std::string sha512 = "sha512:" + std::string(128, 'a');
  const std::string sha384 = "sha384:" + std::string(96, '0');
  const std::vector<Row> rows = {
      {"ubuntu", "docker.io", "library/ubuntu", "latest", "", "docker.io/library/ubuntu:latest"},
      {"ubuntu:24.04", "docker.io", "library/ubuntu", "24.04", "",
       "docker.io/library/ubuntu:24.04"},
      {"pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime", "docker.io", "pytorch/pytorch",
       "2.4.1-cuda12.4-cudnn9-runtime", "",
       "docker.io/pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime"},
      {"nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io", "nvidia/pytorch", "24.01-py3", "",
       "nvcr.io/nvidia/pytorch:24.01-py3"},
      {"nvidia/cuda:12.8.1-base-ubuntu24.04", "docker.io", "nvidia/cuda", "12.8.1-base-ubuntu24.04",
       "", "docker.io/nvidia/cuda:12.8.1-base-ubuntu24.04"},
      {"docker.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04", "docker.io", "nvidia/cuda",
       "12.4.1-runtime-ubuntu22.04", "", "docker.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04"},
      {"index.docker.io/nvidia/cuda", "docker.io", "nvidia/cuda", "latest", "",
       "docker.io/nvidia/cuda:latest"},
      {"registry-1.docker.io/vllm/vllm-openai:v0.23.0", "docker.io", "vllm/vllm-openai", "v0.23.0",
       "", "docker.io/vllm/vllm-openai:v0.23.0"},
      {"docker.io/ubuntu", "docker.io", "library/ubuntu", "latest", "",
       "docker.io/library/ubuntu:latest"},
      {"index.docker.io/ubuntu", "docker.io", "library/ubuntu", "latest", "",
       "docker.io/library/ubuntu:latest"},
      {"docker.io/library/ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", "",
       "docker.io/library/ubuntu:22.04"},
      {"gcr.io/project/team/image:v1", "gcr.io", "project/team/image", "v1", "",
       "gcr.io/project/team/image:v1"},
      {"localhost/app", "localhost", "app", "latest", "", "localhost/app:latest"},
      {"localhost:5000/team/app:v1", "localhost:5000", "team/app", "v1", "",
       "localhost:5000/team/app:v1"},
      // A single component is always a Docker Hub name, even "localhost".
      {"localhost", "docker.io", "library/localhost", "latest", "",
       "docker.io/library/localhost:latest"},
      {"myhost:5000", "docker.io", "library/myhost", "5000", "", "docker.io/library/myhost:5000"},
      {"[::1]:5000/app", "[::1]:5000", "app", "latest", "", "[::1]:5000/app:latest"},
      {"[fe80::1]/app", "[fe80::1]", "app", "latest", "", "[fe80::1]/app:latest"},
      {"192.168.1.10:5000/app:1", "192.168.1.10:5000", "app", "1", "", "192.168.1.10:5000/app:1"},
      // An upper-case first component can only be a host.
      {"MyRegistry/app", "MyRegistry", "app", "latest", "", "MyRegistry/app:latest"},
      {"my-registry.example.com/a__b/c.d/e---f/g_h:TAG_1.0-x", "my-registry.example.com",
       "a__b/c.d/e---f/g_h", "TAG_1.0-x", "",
       "my-registry.example.com/a__b/c.d/e---f/g_h:TAG_1.0-x"},
      {"ubuntu@" + kSha256, "docker.io", "library/ubuntu", "", kSha256,
       "docker.io/library/ubuntu@" + kSha256},
      {"ubuntu:22.04@" + kSha256, "docker.io", "library/ubuntu", "22.04", kSha256,
       "docker.io/library/ubuntu:22.04@" + kSha256},
      {"localhost:5000/app@" + kSha256, "localhost:5000", "app", "", kSha256,
       "localhost:5000/app@" + kSha256},
      {"quay.io/org/img@" + sha512, "quay.io", "org/img", "", sha512, "quay.io/org/img@" + sha512},
      {"quay.io/org/img@" + sha384, "quay.io", "org/img", "", sha384, "quay.io/org/img@" + sha384},
      {"ubuntu:" + tag128, "docker.io", "library/ubuntu", tag128, "",
       "docker.io/library/ubuntu:" + tag128},
      {"ubuntu:_", "docker.io", "library/ubuntu", "_", "", "docker.io/library/ubuntu:_"},
      {"a", "docker.io", "library/a", "latest", "", "docker.io/library/a:latest"},
      {"0/1", "docker.io", "0/1", "latest", "", "docker.io/0/1:latest"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto ref = ImageRef::parse(row.text);
    ASSERT_TRUE(ref) << ref.error().str();
    EXPECT_EQ(ref->registry, row.registry);
    EXPECT_EQ(ref->repository, row.repository);
    EXPECT_EQ(ref->tag, row.tag);
    EXPECT_EQ(ref->digest, row.digest);
    EXPECT_EQ(ref->name(), row.registry + "/" + row.repository);
    EXPECT_EQ(ref->str(), row.str);
    auto again = ImageRef::parse(ref->str());
    ASSERT_TRUE(again) << again.error().str();
    EXPECT_EQ(*again, *ref);
  }
}

TEST(ImageRef, RejectsMalformedReferencesNamingTheProblem) {
  struct Row {
    std::string text;
    std::string message;
  };
  const std::string path_rule =
      ": expected lower-case letters and digits, separated by one '.', one or two '_', or '-'";
  const std::string tag_rule =
      ": a tag is letters, digits, '_', '.' and '-', not starting with '.' or '-'";
  const std::string hex64(64, 'a');
  const std::vector<Row> rows = {
      {"", "empty image reference"},
      {"Ubuntu", "repository name \"Ubuntu\" in image reference \"Ubuntu\" must be lower-case"},
      {"nvidia/CUDA:12.4.1",
       "repository name \"nvidia/CUDA\" in image reference \"nvidia/CUDA:12.4.1\" must be "
       "lower-case"},
      {"nvcr.io/NVIDIA/pytorch",
       "repository name \"NVIDIA/pytorch\" in image reference \"nvcr.io/NVIDIA/pytorch\" must "
       "be lower-case"},
      {"a//b",
       "image reference \"a//b\" has an empty path component (a leading, trailing or doubled "
       "'/')"},
      {"/ubuntu",
       "image reference \"/ubuntu\" has an empty path component (a leading, trailing or doubled "
       "'/')"},
      {"ubuntu/",
       "image reference \"ubuntu/\" has an empty path component (a leading, trailing or doubled "
       "'/')"},
      {"nvcr.io/",
       "image reference \"nvcr.io/\" has an empty path component (a leading, trailing or "
       "doubled '/')"},
      {"foo_/bar", "invalid path component \"foo_\" in image reference \"foo_/bar\"" + path_rule},
      {"-foo", "invalid path component \"-foo\" in image reference \"-foo\"" + path_rule},
      {"foo..bar",
       "invalid path component \"foo..bar\" in image reference \"foo..bar\"" + path_rule},
      {"foo___bar",
       "invalid path component \"foo___bar\" in image reference \"foo___bar\"" + path_rule},
      {"foo bar", "invalid path component \"foo bar\" in image reference \"foo bar\"" + path_rule},
      {"ubuntu:", "image reference \"ubuntu:\" has an empty tag after ':'"},
      {"ubuntu:-rc", "invalid tag \"-rc\" in image reference \"ubuntu:-rc\"" + tag_rule},
      {"ubuntu:.x", "invalid tag \".x\" in image reference \"ubuntu:.x\"" + tag_rule},
      {"ubuntu:a b", "invalid tag \"a b\" in image reference \"ubuntu:a b\"" + tag_rule},
      {"ubuntu:v1!", "invalid tag \"v1!\" in image reference \"ubuntu:v1!\"" + tag_rule},
      {"ubuntu:a:b", "invalid tag \"a:b\" in image reference \"ubuntu:a:b\"" + tag_rule},
      {"ubuntu:" + std::string(129, 't'),
       "tag of image reference \"ubuntu:" + std::string(121, 't') +
           "...\" is 129 characters long, more than the 128 allowed"},
      {":latest", "image reference \":latest\" has no repository name"},
      {"@" + kSha256, "image reference \"@" + kSha256 + "\" has no repository name"},
      {"ubuntu@sha256:abc",
       "invalid digest \"sha256:abc\" in image reference \"ubuntu@sha256:abc\": sha256 needs 64 "
       "lower-case hex digits, got 3 characters"},
      {"ubuntu@sha256:" + std::string(64, 'A'),
       "invalid digest \"sha256:" + std::string(64, 'A') +
           "\" in image reference \"ubuntu@sha256:" + std::string(64, 'A') +
           "\": sha256 needs 64 lower-case hex digits, got 64 characters that are not all 0-9a-f"},
      {"ubuntu@md5:" + std::string(32, 'a'),
       "invalid digest \"md5:" + std::string(32, 'a') +
           "\" in image reference \"ubuntu@md5:" + std::string(32, 'a') +
           "\": unsupported algorithm \"md5\", expected sha256, sha384 or sha512"},
      {"ubuntu@",
       "invalid digest \"\" in image reference \"ubuntu@\": expected <algorithm>:<hex> such as "
       "sha256:..."},
      {"ubuntu@latest",
       "invalid digest \"latest\" in image reference \"ubuntu@latest\": expected "
       "<algorithm>:<hex> such as sha256:..."},
      {hex64, "image reference \"" + hex64 +
                  "\" is a 64-character hexadecimal image ID, not a "
                  "repository name"},
      {"my_registry.io/app",
       "invalid registry \"my_registry.io\" in image reference \"my_registry.io/app\": expected "
       "a host name or [IPv6] address with an optional :port"},
      {"host:port/app",
       "invalid registry \"host:port\" in image reference \"host:port/app\": expected a host "
       "name or [IPv6] address with an optional :port"},
      {"host:/app",
       "invalid registry \"host:\" in image reference \"host:/app\": expected a host name or "
       "[IPv6] address with an optional :port"},
      {"-host.io/app",
       "invalid registry \"-host.io\" in image reference \"-host.io/app\": expected a host name "
       "or [IPv6] address with an optional :port"},
      {"host..io/app",
       "invalid registry \"host..io\" in image reference \"host..io/app\": expected a host name "
       "or [IPv6] address with an optional :port"},
      {"[::1/app",
       "invalid registry \"[::1\" in image reference \"[::1/app\": expected a host "
       "name or [IPv6] address with an optional :port"},
      {"[]:5000/app",
       "invalid registry \"[]:5000\" in image reference \"[]:5000/app\": expected a host name or "
       "[IPv6] address with an optional :port"},
      {"[::1]x/app",
       "invalid registry \"[::1]x\" in image reference \"[::1]x/app\": expected a host name or "
       "[IPv6] address with an optional :port"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto ref = ImageRef::parse(row.text);
    ASSERT_FALSE(ref) << ref->str();
    EXPECT_EQ(ref.error().message, row.message);
  }
}

TEST(ImageRef, LimitsTheNameTo255Characters) {
  // "docker.io/" is 10 characters, "library/" 8 more.
  const std::string fits(255 - 18, 'a');
  auto ok = ImageRef::parse(fits);
  ASSERT_TRUE(ok) << ok.error().str();
  EXPECT_EQ(ok->name().size(), 255U);

  const std::string too_long = fits + "a";
  auto bad = ImageRef::parse(too_long);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "repository name of image reference \"" + too_long.substr(0, 128) +
                                     "...\" is longer than 255 characters");
}

}  // namespace
}  // namespace cudagate
