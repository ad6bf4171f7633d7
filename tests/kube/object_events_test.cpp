// List pages and watch events of any collection as the API server sends
// them: items without kind and apiVersion get the list's, events keep their
// object, and what is not a page or an event is an error that says so.
#include "kube/object_events.h"

#include <gtest/gtest.h>

namespace cudagate::kube {
namespace {

TEST(ParseObjectPage, ItemsGetTheListsKindAndVersion) {
  auto page = parse_object_page(
      R"({"kind":"ResourceSliceList","apiVersion":"resource.k8s.io/v1beta1",
          "metadata":{"resourceVersion":"1169600","continue":"eyJ9"},
          "items":[{"metadata":{"name":"a"},"spec":{}},
                   {"kind":"ResourceSlice","apiVersion":"resource.k8s.io/v1","metadata":{"name":"b"}}]})",
      "ResourceSlice");
  ASSERT_TRUE(page) << page.error().str();
  ASSERT_EQ(page->items.size(), 2u);
  EXPECT_EQ(page->items[0]["kind"], "ResourceSlice");
  EXPECT_EQ(page->items[0]["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(page->items[1]["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(page->continue_token, "eyJ9");
  EXPECT_EQ(page->resource_version, "1169600");
}

TEST(ParseObjectPage, NotAPage) {
  EXPECT_FALSE(parse_object_page("not json", "ResourceSlice"));
  auto status = parse_object_page(R"({"kind":"Status","code":404})", "ResourceSlice");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().where, "ResourceSliceList: kind");
  EXPECT_EQ(status.error().message, "expected ResourceSliceList, got \"Status\"");
  // What the server sent is shown escaped: it may be anything.
  auto odd = parse_object_page(R"({"kind":"Sta\u001btus"})", "ResourceSlice");
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.error().message, "expected ResourceSliceList, got \"Sta\\x1btus\"");
  EXPECT_FALSE(parse_object_page(R"({"kind":"ResourceSliceList","items":{}})", "ResourceSlice"));
}

TEST(ParseEventEnvelope, TypesNamesAndErrors) {
  auto added = parse_event_envelope(
      R"({"type":"ADDED","object":{"kind":"ResourceClaimTemplate","metadata":
          {"name":"one-gpu","namespace":"ml","resourceVersion":"7"}}})");
  ASSERT_TRUE(added) << added.error().str();
  EXPECT_EQ(added->type, EventEnvelope::Type::added);
  EXPECT_EQ(added->name, "one-gpu");
  EXPECT_EQ(added->namespace_, "ml");
  EXPECT_EQ(added->resource_version, "7");
  EXPECT_EQ(added->object["kind"], "ResourceClaimTemplate");

  auto gone = parse_event_envelope(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->type, EventEnvelope::Type::error);
  EXPECT_EQ(gone->code, 410);
  EXPECT_EQ(gone->message, "too old");

  EXPECT_FALSE(parse_event_envelope(R"({"type":"ADDED","object":{"metadata":{}}})"));
  EXPECT_FALSE(parse_event_envelope(R"({"type":"PATCHED","object":{}})"));
  EXPECT_FALSE(parse_event_envelope(R"({"type":"ADDED"})"));
}

}  // namespace
}  // namespace cudagate::kube
