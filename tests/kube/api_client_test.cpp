// The pure parts of the API client: list targets and query escaping.
#include "kube/api_client.h"

#include <gtest/gtest.h>

namespace cudagate::kube {
namespace {

TEST(ApiClient, ListTargets) {
  EXPECT_EQ(list_target(ApiCallId::cluster_list_pods, {}, 500, ""), "/api/v1/pods?limit=500");
  EXPECT_EQ(list_target(ApiCallId::cluster_list_jobs, {"ml", "", ""}, 50, "eyJ2Ijo+/="),
            "/apis/batch/v1/namespaces/ml/jobs?limit=50&continue=eyJ2Ijo%2B%2F%3D");
  EXPECT_EQ(list_target(ApiCallId::write_list_policyreports,
                        {"", "app.kubernetes.io/managed-by=cudagate", ""}, 500, ""),
            "/apis/wgpolicyk8s.io/v1alpha2/policyreports?limit=500&labelSelector=app.kubernetes."
            "io%2Fmanaged-by%3Dcudagate");
}

TEST(ApiClient, QueryEscapeKeepsUnreservedCharacters) {
  EXPECT_EQ(query_escape("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(query_escape("a b&c=d"), "a%20b%26c%3Dd");
  EXPECT_EQ(query_escape("\xff"), "%FF");
}

TEST(ApiClient, ApplyIsForcedUnderCudagatesFieldManager) {
  EXPECT_EQ(kApplyQuery, "?fieldManager=cudagate&force=true");
  EXPECT_EQ(kApplyContentType, "application/apply-patch+yaml");
}

}  // namespace
}  // namespace cudagate::kube
