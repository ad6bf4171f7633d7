// Label key and value syntax against the cases of Kubernetes' own tests
// (k8s.io/apimachinery/pkg/util/validation/validation_test.go:
// TestIsQualifiedName, TestIsDNS1123Subdomain, TestIsValidLabelValue).
#include "policy/objects/k8s_names.h"

#include <gtest/gtest.h>

#include <string>

namespace cudagate {
namespace {

TEST(K8sNames, QualifiedNamesAsLabelKeys) {
  for (const std::string& good :
       {std::string("simple"), std::string("now-with-dashes"), std::string("1-starts-with-num"),
        std::string("1234"), std::string("simple/simple"), std::string("now-with-dashes/simple"),
        std::string("now-with-dashes/now-with-dashes"), std::string("now.with.dots/simple"),
        std::string("now-with.dashes-and.dots/simple"), std::string("1-num.2-num/3-num"),
        std::string("1234/5678"), std::string("1.2.3.4/5678"), std::string("Uppercase_Is_OK_123"),
        std::string("example.com/Uppercase_Is_OK_123"), std::string("requests.storage-foo"),
        std::string(63, 'a'), std::string(253, 'a') + "/" + std::string(63, 'b')}) {
    EXPECT_TRUE(is_label_key(good)) << good;
  }
  for (const std::string& bad :
       {std::string("nospecialchars%^=@"), std::string("cantendwithadash-"),
        std::string("-cantstartwithadash-"), std::string("only/one/slash"),
        std::string("Example.com/abc"), std::string("example_com/abc"), std::string("example.com/"),
        std::string("/simple"), std::string(64, 'a'), std::string(254, 'a') + "/abc",
        std::string("a.-b/c"), std::string("a..b/c"), std::string("")}) {
    EXPECT_FALSE(is_label_key(bad)) << bad;
  }
}

TEST(K8sNames, Dns1123Subdomains) {
  for (const std::string& good :
       {std::string("a"), std::string("ab"), std::string("abc"), std::string("a1"),
        std::string("a-1"), std::string("a--1--2--b"), std::string("0"), std::string("01"),
        std::string("a.a"), std::string("ab.a"), std::string("a-1.a"), std::string("a--1--2--b.a"),
        std::string("1.a"), std::string("a.b.c.d.e"), std::string("aa.bb.cc.dd.ee"),
        std::string("1.2.3.4.5"), std::string("11.22.33.44.55"), std::string(253, 'a')}) {
    EXPECT_TRUE(is_dns1123_subdomain(good)) << good;
  }
  for (const std::string& bad :
       {std::string(""),      std::string("A"),    std::string("ABC"),  std::string("aBc"),
        std::string("A1"),    std::string("A-1"),  std::string("1-A"),  std::string("-"),
        std::string("a-"),    std::string("-a"),   std::string("1-"),   std::string("-1"),
        std::string("_"),     std::string("a_"),   std::string("_a"),   std::string("a_b"),
        std::string("1_"),    std::string("_1"),   std::string("1_2"),  std::string("."),
        std::string("a."),    std::string(".a"),   std::string("a..b"), std::string("1."),
        std::string(".1"),    std::string("1..2"), std::string(" "),    std::string("a "),
        std::string(" a"),    std::string("a b"),  std::string("A.a"),  std::string("aB.a"),
        std::string("ab.A"),  std::string("A1.a"), std::string("a1.A"), std::string("A.1"),
        std::string("1.A"),   std::string("-.a"),  std::string("a-.a"), std::string("a.-a"),
        std::string(254, 'a')}) {
    EXPECT_FALSE(is_dns1123_subdomain(bad)) << bad;
  }
}

TEST(K8sNames, LabelValues) {
  for (const std::string& good : {std::string("simple"), std::string("now-with-dashes"),
                                  std::string("1-starts-with-num"), std::string("end-with-num-1"),
                                  std::string("1234"), std::string(63, 'a'), std::string("")}) {
    EXPECT_TRUE(is_label_value(good)) << good;
  }
  for (const std::string& bad :
       {std::string("nospecialchars%^=@"), std::string("Tama-nui-te-r\xC4\x81.is_M\xC4\x81ori.sun"),
        std::string("\\backslashes\\are\\bad"), std::string("-starts-with-dash"),
        std::string("ends-with-dash-"), std::string(".starts.with.dot"),
        std::string("ends.with.dot."), std::string(64, 'a')}) {
    EXPECT_FALSE(is_label_value(bad)) << bad;
  }
}

}  // namespace
}  // namespace cudagate
